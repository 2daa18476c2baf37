package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/outbox"
)

// httpLoad drives `compute serve` API processes the way tenants do: over
// HTTP, with a member token per tenant, against one or more base URLs. It is
// the end-to-end counterpart of runLoad, which calls the command handlers
// in-process.
type httpLoad struct {
	client  *http.Client
	urls    []string
	tenants []string
	tokens  map[string]string // tenant → bearer secret
	pools   []string
	window  time.Time
	next    atomic.Uint64 // round-robin over urls
}

// newHTTPLoad creates one member token per tenant of app (setupApp drops
// the secrets of its own) and one transport shared by every client, with
// enough idle connections per host that clients never queue for one.
func newHTTPLoad(ctx context.Context, app *appEnv, clients int) (*httpLoad, error) {
	l := &httpLoad{tenants: app.tenants, tokens: map[string]string{}, pools: app.poolIDs(), window: app.window,
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			MaxIdleConns: 4 * clients, MaxIdleConnsPerHost: 2 * clients, IdleConnTimeout: time.Minute}}}
	if len(l.pools) == 0 {
		return nil, fmt.Errorf("http load: the fleet has no pools (seed it first)")
	}
	tokens := &commands.Tokens{Pool: app.pool}
	for _, t := range app.tenants {
		tok, err := tokens.CreateToken(ctx, operator, t, "bench-http", core.RoleMember)
		if err != nil {
			return nil, fmt.Errorf("token of %s: %w", t, err)
		}
		l.tokens[t] = tok.Secret
	}
	return l, nil
}

func (l *httpLoad) close() { l.client.CloseIdleConnections() }

// HTTPLoadRun is one timed HTTP reservation run: each client creates a
// one-GPU reservation in a random pool for the shared one-hour window as a
// random tenant, then releases it (cancels it when pending).
type HTTPLoadRun struct {
	Clients   int              `json:"clients"`
	URLs      int              `json:"apiProcesses"`
	Seconds   float64          `json:"seconds"`
	Booked    int64            `json:"booked"`
	Pending   int64            `json:"pending"`
	Errors    map[string]int64 `json:"errors"` // by error code; "end:" prefix for release/cancel
	PerSec    float64          `json:"reservationsPerSec"`
	P50Ms     float64          `json:"createP50Ms"`
	P99Ms     float64          `json:"createP99Ms"`
	LastPos   string           `json:"lastPosition"` // greatest position a command returned
	commits   []commitMark
	lagSample []time.Duration
}

// commitMark is a command's transaction (the TxID of the position it
// returned) and when the client had its answer: the commit happened before.
type commitMark struct {
	txid uint64
	at   time.Time
}

// httpLoadSpec bounds a run and says which creates to follow with a
// read-your-writes read.
type httpLoadSpec struct {
	urls    []string // API base URLs, used round-robin per request
	clients int
	phase   time.Duration
	maxOps  int
	// readEvery: one booked create in readEvery of each client (from its
	// first) is read back with GET /v1/reservations/{id}?minPosition=<its
	// position> before the release; 0 reads none.
	readEvery int
}

type httpTally struct {
	lat     []time.Duration
	booked  int64
	pending int64
	errs    map[string]int64
	commits []commitMark
	lag     []time.Duration
	last    outbox.Position
}

// run drives spec.clients clients until spec.phase has passed or
// spec.maxOps creates were sent.
func (l *httpLoad) run(ctx context.Context, spec httpLoadSpec) HTTPLoadRun {
	l.urls = spec.urls
	tallies := make([]httpTally, spec.clients)
	var budget atomic.Int64
	budget.Store(int64(spec.maxOps))
	start := time.Now()
	deadline := start.Add(spec.phase)
	var wg sync.WaitGroup
	for i := range tallies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.client1(ctx, spec, deadline, &budget, &tallies[i])
		}()
	}
	wg.Wait()
	r := HTTPLoadRun{Clients: spec.clients, URLs: len(l.urls), Seconds: time.Since(start).Seconds(), Errors: map[string]int64{}}
	var lat []time.Duration
	var last outbox.Position
	for _, t := range tallies {
		r.Booked += t.booked
		r.Pending += t.pending
		for k, v := range t.errs {
			r.Errors[k] += v
		}
		lat = append(lat, t.lat...)
		r.commits = append(r.commits, t.commits...)
		r.lagSample = append(r.lagSample, t.lag...)
		if last.Less(t.last) {
			last = t.last
		}
	}
	r.LastPos = last.String()
	r.PerSec = float64(r.Booked) / r.Seconds
	r.P50Ms, r.P99Ms = percentileMs(lat, 0.50), percentileMs(lat, 0.99)
	return r
}

func (l *httpLoad) client1(ctx context.Context, spec httpLoadSpec, deadline time.Time, budget *atomic.Int64, t *httpTally) {
	t.errs = map[string]int64{}
	for n := 0; ctx.Err() == nil && time.Now().Before(deadline) && budget.Add(-1) >= 0; n++ {
		tenant := l.tenants[rand.IntN(len(l.tenants))]
		body, _ := json.Marshal(map[string]any{"poolId": l.pools[rand.IntN(len(l.pools))], "gpus": 1, "gpuModel": gpuModel,
			"start": l.window.Format(time.RFC3339), "end": l.window.Add(time.Hour).Format(time.RFC3339)})
		t0 := time.Now()
		var res reservationJSON
		code := l.do(ctx, tenant, http.MethodPost, "/v1/reservations", body, &res)
		took := time.Since(t0)
		if code != "" {
			t.errs[code]++
			continue
		}
		t.mark(res.Position, time.Now())
		switch res.State {
		case string(core.ReservationBooked):
			t.booked++
			t.lat = append(t.lat, took)
			if spec.readEvery > 0 && (t.booked-1)%int64(spec.readEvery) == 0 { // each client's 1st, 11th, …
				l.readBack(ctx, tenant, res, t0.Add(took), t)
			}
		default:
			t.pending++
		}
		verb := "cancel"
		if res.State == string(core.ReservationBooked) {
			verb = "release"
		}
		var ended reservationJSON
		if code := l.do(ctx, tenant, http.MethodPost, "/v1/reservations/"+res.ID+"/"+verb, nil, &ended); code != "" {
			t.errs["end:"+code]++
			continue
		}
		t.mark(ended.Position, time.Now())
	}
}

// readBack is the read-your-writes path a client uses: GET the reservation
// with the create's position as minPosition. The API waits (polling the
// projection cursor every 20 ms, queries.DefaultPollInterval) until the
// reservations read model has passed that position, so the time from the
// create's answer to this answer is the projection lag a client sees,
// rounded up to that polling step.
func (l *httpLoad) readBack(ctx context.Context, tenant string, res reservationJSON, answered time.Time, t *httpTally) {
	var got reservationJSON
	if code := l.do(ctx, tenant, http.MethodGet, "/v1/reservations/"+res.ID+"?minPosition="+res.Position, nil, &got); code != "" {
		t.errs["read:"+code]++
		return
	}
	t.lag = append(t.lag, time.Since(answered))
}

func (t *httpTally) mark(position string, at time.Time) {
	p, err := outbox.ParsePosition(position)
	if err != nil || p.IsZero() {
		t.errs["bad-position"]++
		return
	}
	t.commits = append(t.commits, commitMark{txid: p.TxID, at: at})
	if t.last.Less(p) {
		t.last = p
	}
}

// reservationJSON is the part of the API's reservation the load reads.
type reservationJSON struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Position string `json:"position"`
}

// do sends one request to the next base URL and decodes a 2xx answer into
// out. It returns "" on success, else the error code of the API's error
// envelope, or http_<status> / transport when there is none.
func (l *httpLoad) do(ctx context.Context, tenant, method, path string, body []byte, out any) string {
	base := l.urls[int(l.next.Add(1)%uint64(len(l.urls)))]
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return "request"
	}
	req.Header.Set("Authorization", "Bearer "+l.tokens[tenant])
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return "transport"
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "transport"
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error.Code != "" {
			return e.Error.Code
		}
		return fmt.Sprintf("http_%d", resp.StatusCode)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return "bad-body:" + strings.SplitN(err.Error(), ":", 2)[0]
	}
	return ""
}

// httpFleet prepares the database at url for an HTTP run: tenants
// (setupApp), a fleet of pipelineNodes nodes and a load with a token per
// tenant. The caller closes both.
func httpFleet(ctx context.Context, url string, p plan, prog *progress) (*appEnv, *httpLoad, error) {
	prog.set("migrating and creating %d tenants", p.tenants)
	app, err := setupApp(ctx, url, p)
	if err != nil {
		return nil, nil, err
	}
	if _, err := app.seedTo(ctx, pipelineNodes(p), prog); err != nil {
		app.close()
		return nil, nil, err
	}
	load, err := newHTTPLoad(ctx, app, p.httpClients)
	if err != nil {
		app.close()
		return nil, nil, err
	}
	return app, load, nil
}
