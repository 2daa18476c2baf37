package testenv

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// LogBuffer is a log destination that a server's goroutines write to
// while the test reads it: a bytes.Buffer behind a mutex.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// LevelsAndMessages is "LEVEL msg" of each JSON line written so far, in
// order: what a test of how much a component logs compares.
func (b *LogBuffer) LevelsAndMessages(t testing.TB) []string {
	t.Helper()
	var out []string
	for line := range strings.SplitSeq(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, line)
		}
		out = append(out, rec.Level+" "+rec.Msg)
	}
	return out
}
