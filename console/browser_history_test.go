package console_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestBrowserReservationHistoryOnABusyLog opens a reservation made after 1,040 other
// reservation events of its tenant. Its page must show its history: the page asked for
// the tenant's reservation events from the start of the log, ten pages of 100, and kept the
// reservation's, so on a busy log a recent reservation showed an empty "State changes".
// It then asked for the reservation's subject (GET /v1/events?subject=), however far
// along the log its events are, and filtered the tab's shared stream for its live changes.
// It now opens one stream of the reservation's subject from the start of the log
// (GET /v1/events/stream?subject=…&after=): its history and its live changes in one order,
// filtered by the server; the page lists nothing itself.
func TestBrowserReservationHistoryOnABusyLog(t *testing.T) {
	chromium := chromiumPath(t)
	d := startDemo(t, "COMPUTE_RATE_LIMIT=0") // the flood below is 1,040 requests
	// 520 reservations booked and released through the API, two events each: more than
	// the ten pages of 100 the page read.
	spec := map[string]any{"start": time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339),
		"end": time.Now().Add(49 * time.Hour).UTC().Format(time.RFC3339)}
	errs := make(chan error, 4)
	for w := range 4 {
		go func() {
			for i := range 130 {
				id, err := d.reserveBooked(spec, fmt.Sprintf("flood-%d-%d", w, i))
				if err == nil {
					_, err = d.post("/v1/reservations/"+id+"/release", "")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	id := reserve(t, d, d.tenant, nil)

	b := newBrowser(t, chromium)
	tn := b.tab(t, "tenant")
	tn.signIn(d.url, d.tenant)
	tn.open("#/reservations/"+id, "#reservation-state")
	tn.waitFor("the history shows its booking", `!!document.querySelector('#history li[data-type="reservation.booked"]')`)
	tn.waitFor("the note says the history was read whole", `[...document.querySelectorAll('p.muted')].some((p) => p.textContent === 'From the log, then live.')`)
	stream := "/v1/events/stream?subject=" + url.QueryEscape("reservations/"+id) + "&after="
	var streamed bool
	for _, u := range b.requested() {
		streamed = streamed || strings.HasSuffix(u, stream)
		if strings.Contains(u, "/v1/events?") {
			t.Fatalf("the page listed events itself: %s", u)
		}
	}
	if !streamed {
		t.Fatalf("the page opened no stream of its subject (%s)", stream)
	}

	// A change arrives live on that stream, and the page redraws for it.
	if _, err := d.post("/v1/reservations/"+id+"/release", ""); err != nil {
		t.Fatal(err)
	}
	tn.waitFor("the release arrives in its history", `!!document.querySelector('#history li[data-type="reservation.released"]')`)
	tn.waitFor("the page redraws the state", `document.querySelector('#reservation-state')?.dataset.state === 'released'`)
}

// reserveBooked books a reservation of the demo tenant in demo-pool (as reserve, with
// spec's overrides) and returns its id; a reservation left pending is an error. Safe to
// call from several goroutines, unlike reserve (t.Fatal).
func (d *demo) reserveBooked(spec map[string]any, key string) (string, error) {
	body := map[string]any{"poolId": "demo-pool", "gpus": 1, "vcpu": 4, "memoryMb": 16384, "diskGb": 10}
	for k, v := range spec {
		body[k] = v
	}
	b, _ := json.Marshal(body)
	out, err := d.post("/v1/reservations", string(b), "Idempotency-Key", key)
	if err != nil {
		return "", err
	}
	var r struct{ ID, State string }
	if err := json.Unmarshal(out, &r); err != nil || r.State != "booked" {
		return "", fmt.Errorf("reservation %s: %v", out, err)
	}
	return r.ID, nil
}

// post POSTs body as the demo tenant and returns a 2xx answer's body.
func (d *demo) post(path, body string, header ...string) ([]byte, error) {
	req, _ := http.NewRequest(http.MethodPost, d.url+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+d.tenant)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("POST %s: %d: %s", path, resp.StatusCode, b)
	}
	return b, nil
}
