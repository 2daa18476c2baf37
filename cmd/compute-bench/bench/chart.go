package bench

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strconv"
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

// chartSVG draws every ratio on one logarithmic axis: the ratios of a run
// span four orders of magnitude (0.03 for the write path against pgbench,
// 100+ for the outbox reader against its writer), which a linear axis
// would flatten to invisible bars. Each bar carries its value.
func chartSVG(r *Results) []byte {
	lo, hi := 1.0, 1.0
	for _, x := range r.Ratios {
		if x.Value > 0 {
			lo, hi = min(lo, x.Value), max(hi, x.Value)
		}
	}
	decLo, decHi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if decHi == decLo {
		decHi++
	}
	scale := func(v float64) float64 {
		if v <= 0 {
			return 0
		}
		return chartBarW * (math.Log10(v) - decLo) / (decHi - decLo)
	}
	w := chartLabelW + chartBarW + 80
	h := chartTop + chartRowH*len(r.Ratios) + 50
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="14" font-weight="bold">compute-bench %s: ratios within one run (log scale)</text>`+"\n",
		html.EscapeString(r.Date))
	fmt.Fprintf(&b, `<text x="10" y="34" fill="#555">%d cores, PostgreSQL %s%s; dashed line = parity (1.0)</text>`+"\n",
		r.Machine.Cores, html.EscapeString(r.Machine.PGVersion), quickNote(r.Quick))
	bottom := chartTop + chartRowH*len(r.Ratios)
	for d := decLo; d <= decHi; d++ {
		x := float64(chartLabelW) + scale(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x, chartTop-4, x, bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>`+"\n", x, bottom+16, tickLabel(d))
	}
	for i, x := range r.Ratios {
		y := chartTop + i*chartRowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", chartLabelW-8, y+15, html.EscapeString(x.Name))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", chartLabelW, y+3, scale(x.Value), chartRowH-6, barColour(x.Value))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", float64(chartLabelW)+scale(x.Value)+4, y+15, ratioLabel(x.Value))
	}
	one := float64(chartLabelW) + scale(1)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black" stroke-dasharray="4 3"/>`+"\n",
		one, chartTop-4, one, bottom)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">ratio (numerator ÷ denominator)</text>`+"\n",
		float64(chartLabelW)+chartBarW/2, bottom+34)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// tickLabel is 10^d written plainly (0.01, 0.1, 1, 10, 100).
func tickLabel(d float64) string {
	return strconv.FormatFloat(math.Pow(10, d), 'f', -1, 64)
}

// ratioLabel is a bar's value with three significant digits.
func ratioLabel(v float64) string {
	return strconv.FormatFloat(v, 'g', 3, 64) + "×"
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
