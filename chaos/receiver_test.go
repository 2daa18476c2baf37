package chaos

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/bettercompute/compute/webhook"
)

// receiver is a webhook consumer on loopback that does what the docs ask of
// one: verify the signature, then deduplicate by webhook-id (the event id,
// the same across retries). It counts raw deliveries and applied effects
// separately, so the audit can say how many duplicates dedup absorbed and
// that no effect was applied twice.
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	secret   string
	raw      int            // 2xx answers given, duplicates included
	applied  map[string]int // webhook-id → times its effect was applied (must be 1)
	rejected int            // failed verification: must stay 0
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{applied: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is where the endpoint should point.
func (r *receiver) URL() string { return r.srv.URL + "/hook" }

func (r *receiver) setSecret(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = s
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := webhook.Verify(r.secret, req.Header, body); err != nil {
		r.rejected++
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	r.raw++
	id := req.Header.Get(webhook.HeaderID)
	if r.applied[id] == 0 {
		r.applied[id]++ // the effect: applied only for an id not seen before
	}
	w.WriteHeader(http.StatusNoContent)
}

// receiverStats is a snapshot for reports.
type receiverStats struct {
	Raw, Unique, DoubleApplied, Rejected int
}

func (r *receiver) stats() receiverStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := receiverStats{Raw: r.raw, Unique: len(r.applied), Rejected: r.rejected}
	for _, n := range r.applied {
		if n > 1 {
			s.DoubleApplied++
		}
	}
	return s
}

// missing returns the ids in want that never arrived.
func (r *receiver) missing(want []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, id := range want {
		if r.applied[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}

// received returns the set of webhook-ids received so far.
func (r *receiver) received() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]bool, len(r.applied))
	for id := range r.applied {
		out[id] = true
	}
	return out
}
