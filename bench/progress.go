package bench

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress is one status line, rewritten in place on stderr, so a long run
// shows what it is doing without burying the table printed at the end.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	last  int
}

func newProgress(w io.Writer) *progress { return &progress{w: w, start: time.Now()} }

// set replaces the status line.
func (p *progress) set(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf("[%4.0fs] %s", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
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
	if p.last > 0 {
		fmt.Fprintln(p.w)
		p.last = 0
	}
}
