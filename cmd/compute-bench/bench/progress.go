package bench

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"sync"
	"time"
)

// progress is one status line, rewritten in place on a terminal, so a long
// run shows what it is doing without burying the table printed at the end.
// On anything else (a CI log) it writes one line per phase instead: the
// text without its counter ("12 / 300") or bar names the phase.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	start time.Time
	last  int    // length of the line on screen (tty)
	phase string // phase of the last line written (log)
}

// counter matches the moving part of a status: "…: 12 / 300" or a bar.
var counter = regexp.MustCompile(`(:\s*[0-9,]+\s*/\s*[0-9,]+.*|\s*\[[= ]*\].*)$`)

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, start: time.Now()}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// set replaces the status line.
func (p *progress) set(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	text := fmt.Sprintf(format, args...)
	line := fmt.Sprintf("[%4.0fs] %s", time.Since(p.start).Seconds(), text)
	if !p.tty {
		if phase := counter.ReplaceAllString(text, ""); phase != p.phase {
			fmt.Fprintln(p.w, line)
			p.phase = phase
		}
		return
	}
	pad := max(0, p.last-len(line))
	fmt.Fprintf(p.w, "\r%s%*s", line, pad, "")
	p.last = len(line)
}

// tick shows a bar for a timed phase, updated twice a second, until the
// returned stop is called.
func (p *progress) tick(what string, phase time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t0 := time.Now()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			frac := min(1, time.Since(t0).Seconds()/phase.Seconds())
			n := int(frac * 20)
			p.set("%s [%-20s] %3.0f%%", what, string(bar[:n]), frac*100)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

var bar = []byte("====================")

// done ends the status line so that what follows starts on a fresh one.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.last > 0 {
		fmt.Fprintln(p.w)
		p.last = 0
	}
}
