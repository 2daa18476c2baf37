package bench

import (
	"bytes"
	"fmt"
	"html"
	"os"
	"path/filepath"
)

// Chart geometry, in SVG user units.
const (
	chartLabelW = 430
	chartBarW   = 360
	chartRowH   = 24
	chartTop    = 44
)

// writeChart draws the run's ratios as horizontal bars with a line at 1.0
// (parity with the denominator) into dir/ratios.svg. It is plain SVG
// written by hand: one picture does not justify a plotting dependency.
func writeChart(dir string, r *Results) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "ratios.svg"), chartSVG(r), 0o644)
}

func chartSVG(r *Results) []byte {
	top := 1.0
	for _, x := range r.Ratios {
		top = max(top, x.Value)
	}
	top *= 1.1
	scale := func(v float64) float64 { return chartBarW * v / top }
	w := chartLabelW + chartBarW + 70
	h := chartTop + chartRowH*len(r.Ratios) + 30
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">compute-bench %s — ratios measured in one run (%d cores, PostgreSQL %s%s)</text>`+"\n",
		html.EscapeString(r.Date), r.Machine.Cores, html.EscapeString(r.Machine.PGVersion), quickNote(r.Quick))
	for i, x := range r.Ratios {
		y := chartTop + i*chartRowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", chartLabelW-8, y+15, html.EscapeString(x.Name))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", chartLabelW, y+3, scale(x.Value), chartRowH-6, barColour(x.Value))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%.3f</text>`+"\n", float64(chartLabelW)+scale(x.Value)+4, y+15, x.Value)
	}
	one := float64(chartLabelW) + scale(1)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black" stroke-dasharray="4 3"/>`+"\n",
		one, chartTop-4, one, chartTop+chartRowH*len(r.Ratios))
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">1.0</text>`+"\n", one, chartTop+chartRowH*len(r.Ratios)+16)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func quickNote(quick bool) string {
	if quick {
		return ", --quick"
	}
	return ""
}

// barColour marks ratios below parity, which are the ones to read twice.
func barColour(v float64) string {
	if v < 1 {
		return "#d98c3f"
	}
	return "#3f7fd9"
}
