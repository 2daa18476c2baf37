package bench

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/bettercompute/compute/webhook"
)

// receiver is the local webhook endpoint: it answers 204 at once and
// keeps each POST (headers and body) to verify its signature afterwards,
// since a delivery may arrive before the test has the endpoint's secret.
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	secrets map[string]string // tenant → whsec_
	posts   []receivedPost
	first   map[string]time.Time // webhook-id → first arrival
	arrived chan struct{}        // poked after every new id
}

type receivedPost struct {
	tenant string
	at     time.Time
	header http.Header
	body   []byte
}

func newReceiver() *receiver {
	r := &receiver{secrets: map[string]string{}, first: map[string]time.Time{}, arrived: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve)) // 127.0.0.1
	return r
}

func (r *receiver) close() { r.srv.Close() }

func (r *receiver) setSecret(tenant, secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets[tenant] = secret
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	at := time.Now()
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	tenant, _ := strings.CutPrefix(req.URL.Path, "/hook/")
	id := req.Header.Get(webhook.HeaderID)
	r.mu.Lock()
	r.posts = append(r.posts, receivedPost{tenant: tenant, at: at, header: req.Header.Clone(), body: body})
	if _, dup := r.first[id]; !dup {
		r.first[id] = at
	}
	r.mu.Unlock()
	select {
	case r.arrived <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusNoContent)
}

// waitFor waits until every event of evs has arrived, or timeout. It
// returns how many had not, and the arrival of the last one that had.
func (r *receiver) waitFor(ctx context.Context, evs []tenantEvent, timeout time.Duration) (missing int, last time.Time) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		missing, last = 0, time.Time{}
		r.mu.Lock()
		for _, e := range evs {
			at, ok := r.first[e.id]
			switch {
			case !ok:
				missing++
			case at.After(last):
				last = at
			}
		}
		r.mu.Unlock()
		if missing == 0 {
			return missing, last
		}
		select {
		case <-ctx.Done():
			return missing, last
		case <-deadline.C:
			return missing, last
		case <-r.arrived:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// summary verifies every POST's Standard Webhooks signature with its
// tenant's secret at the time it arrived, and counts repeats of an id.
func (r *receiver) summary() (first map[string]time.Time, received, duplicates, bad int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, p := range r.posts {
		id := p.header.Get(webhook.HeaderID)
		if seen[id] {
			duplicates++
		}
		seen[id] = true
		if webhook.VerifyAt(r.secrets[p.tenant], p.header, p.body, p.at) != nil {
			bad++
		}
	}
	return maps.Clone(r.first), int64(len(r.posts)), duplicates, bad
}
