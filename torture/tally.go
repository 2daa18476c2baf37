package torture

import "sync"

// tally counts outcomes by operation kind.
type tally struct {
	mu sync.Mutex
	m  map[string]map[string]int
}

func newTally() *tally { return &tally{m: map[string]map[string]int{}} }

func (t *tally) add(kind, outcome string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[kind] == nil {
		t.m[kind] = map[string]int{}
	}
	t.m[kind][outcome]++
}

func (t *tally) snapshot() map[string]map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]map[string]int, len(t.m))
	for k, m := range t.m {
		c := make(map[string]int, len(m))
		for o, n := range m {
			c[o] = n
		}
		out[k] = c
	}
	return out
}
