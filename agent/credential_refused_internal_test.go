package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

// fakeClock is the daemon's clock in these tests: its session loop's waits
// move it instead of taking real time.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// refusingGateway answers every dial 401 with body, recording when (on
// clock) and with which credential each came.
type refusingGateway struct {
	url   string
	mu    sync.Mutex
	dials []time.Time
	seen  []string
}

func newRefusingGateway(t *testing.T, clock *fakeClock, body string) *refusingGateway {
	g := &refusingGateway{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.dials = append(g.dials, clock.Now())
		g.seen = append(g.seen, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		g.mu.Unlock()
		http.Error(w, body, http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	g.url = "ws://" + strings.TrimPrefix(srv.URL, "http://")
	return g
}

// refusedDaemon is a daemon whose session loop runs against gw on clock,
// logging into logs; each wait moves clock, and the loop ends when stop,
// asked after each wait, says so.
func refusedDaemon(t *testing.T, gw *refusingGateway, clock *fakeClock, logs *lockedLog, tweak func(*Config),
	stop func(now time.Time) bool) *daemon {
	cfg := Config{NodeID: "n1", StateDir: t.TempDir(), GatewayURLs: []string{gw.url}, ReconnectDelay: time.Second}
	tweak(&cfg)
	d := &daemon{cfg: cfg, token: "bcn_old", log: slog.New(slog.NewJSONHandler(logs, nil)), now: clock.Now}
	d.sleepFunc = func(_ context.Context, dur time.Duration) bool {
		return !stop(clock.advance(dur))
	}
	return d
}

// lockedLog collects JSON log lines.
type lockedLog struct {
	mu    sync.Mutex
	lines []map[string]any
}

func (l *lockedLog) Write(p []byte) (int, error) {
	var rec map[string]any
	if err := json.Unmarshal(p, &rec); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, rec)
	return len(p), nil
}

// above returns the messages logged at level or above, in order.
func (l *lockedLog) above(level slog.Level) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, rec := range l.lines {
		var lv slog.Level
		if lv.UnmarshalText([]byte(rec["level"].(string))) == nil && lv >= level {
			out = append(out, rec["msg"].(string))
		}
	}
	return out
}

// A daemon whose credential the gateway refuses (revoked, or its node
// retired) says so once, with what the operator must do, and again only
// every hour while it lasts, not at every attempt; its attempts back off,
// doubling from the reconnect delay up to an hour, instead of dialing
// every 30 s for ever.
func TestRefusedCredentialIsLoggedOnceAndBacksOff(t *testing.T) {
	for _, c := range []struct {
		name, body, says string
	}{
		{"revoked", wire.RefusedCredential, msgCredentialRefusedNoFile},
		{"retired", wire.RefusedNodeRetired, msgNodeRetired},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
			clock := &fakeClock{now: t0}
			gw := newRefusingGateway(t, clock, c.body)
			logs := &lockedLog{}
			firstHour := 0
			d := refusedDaemon(t, gw, clock, logs, func(*Config) {}, func(now time.Time) bool {
				if now.Sub(t0) < 59*time.Minute {
					firstHour = len(logs.above(slog.LevelWarn))
				}
				return now.Sub(t0) > 6*time.Hour
			})
			d.keepSession(context.Background(), context.Background())

			require.Equal(t, 1, firstHour, "one line for the first hour of refusals: %v", logs.above(slog.LevelInfo))
			said := logs.above(slog.LevelWarn)
			for _, msg := range said {
				require.Equal(t, c.says, msg)
			}
			// Reminders: about one an hour (the waits are an hour ±20 % by
			// then), never one per attempt.
			require.GreaterOrEqual(t, len(said), 3, "%v", said)
			require.LessOrEqual(t, len(said), 7, "%v", said)

			gw.mu.Lock()
			dials := append([]time.Time(nil), gw.dials...)
			gw.mu.Unlock()
			require.Less(t, len(dials), 30, "six hours of refusals take a few dozen dials, not one every 30 s")
			var waits []time.Duration
			for i := 1; i < len(dials); i++ {
				waits = append(waits, dials[i].Sub(dials[i-1]))
			}
			// Doubling from 1 s (±20 %) until the cap: each wait longer than
			// the one before.
			for i := 1; i < 12; i++ {
				require.Greater(t, waits[i], waits[i-1], "waits %v", waits)
			}
			require.Greater(t, waits[11], 25*time.Minute, "2048 s ±20 %%: %v", waits)
			for _, w := range waits {
				require.LessOrEqual(t, w, refusedMaxWait*6/5, "capped at an hour ±20 %%: %v", waits)
			}
			require.Greater(t, waits[len(waits)-1], refusedMaxWait*4/5, "at the cap: %v", waits)
		})
	}
}

// While it backs off, the daemon of a revoked node watches its
// --join-token-file: a join token written there is used within seconds,
// not at the next attempt an hour away, and the loop carries on with the
// new credential.
func TestRefusedCredentialRejoinsAsSoonAsAJoinTokenIsWritten(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	gw := newRefusingGateway(t, clock, wire.RefusedCredential)
	var mu sync.Mutex
	var joinedAt time.Time
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/nodes/n1/join" || r.Header.Get("Authorization") != "Bearer bcj_new" {
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		mu.Lock()
		joinedAt = clock.Now()
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"token":"bcn_new"}`))
	}))
	t.Cleanup(api.Close)
	tokenFile := filepath.Join(t.TempDir(), "join-token")
	logs := &lockedLog{}
	var writtenAt time.Time
	d := refusedDaemon(t, gw, clock, logs, func(c *Config) { c.ServerURL, c.JoinTokenFile = api.URL, tokenFile },
		func(now time.Time) bool {
			// The operator writes the token at 3 h, in the middle of a
			// wait of about an hour: the file is there when the daemon's
			// clock passes that moment.
			if writtenAt.IsZero() && now.Sub(t0) >= 3*time.Hour {
				require.NoError(t, os.WriteFile(tokenFile, []byte("bcj_new\n"), 0o600))
				writtenAt = t0.Add(3 * time.Hour)
			}
			gw.mu.Lock()
			defer gw.mu.Unlock()
			return gw.seen[len(gw.seen)-1] == "bcn_new" || now.Sub(t0) > 10*time.Hour
		})
	d.keepSession(context.Background(), context.Background())

	mu.Lock()
	defer mu.Unlock()
	require.False(t, joinedAt.IsZero(), "joined: %v", logs.above(slog.LevelInfo))
	require.LessOrEqual(t, joinedAt.Sub(writtenAt), joinTokenPoll, "the token was taken within a poll")
	require.Equal(t, "bcn_new", d.token)
	saved, err := os.ReadFile(credentialPath(d.cfg))
	require.NoError(t, err)
	require.Equal(t, "bcn_new", string(saved))
	require.NoFileExists(t, tokenFile)
	require.Equal(t, []string{msgCredentialRefused}, logs.above(slog.LevelWarn)[:1])
}

// The operator's `curl … > join-token` creates the file empty before curl
// has the answer, and the daemon, watching the file, may look in between:
// an empty file is a token still being written, so the daemon waits for
// it instead of joining with nothing and logging that the token failed
// and a new one is needed (seen on a real node-7: "re-joining with the
// join token in --join-token-file failed … no credential yet", then a join
// 2 s later with the same file). It joins once the token is there.
func TestRefusedCredentialWaitsForAJoinTokenFileBeingWritten(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	gw := newRefusingGateway(t, clock, wire.RefusedCredential)
	var mu sync.Mutex
	var joins []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		joins = append(joins, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer bcj_new" {
			http.Error(w, "unexpected", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"token":"bcn_new"}`))
	}))
	t.Cleanup(api.Close)
	tokenFile := filepath.Join(t.TempDir(), "join-token")
	logs := &lockedLog{}
	var emptyAt time.Time
	filled := false
	d := refusedDaemon(t, gw, clock, logs, func(c *Config) { c.ServerURL, c.JoinTokenFile = api.URL, tokenFile },
		func(now time.Time) bool {
			switch {
			case emptyAt.IsZero() && now.Sub(t0) >= time.Hour:
				require.NoError(t, os.WriteFile(tokenFile, nil, 0o600))
				emptyAt = now
			case !emptyAt.IsZero() && !filled && now.Sub(emptyAt) >= 3*joinTokenPoll:
				// The daemon has seen the empty file meanwhile.
				require.NoError(t, os.WriteFile(tokenFile, []byte("bcj_new\n"), 0o600))
				filled = true
			}
			gw.mu.Lock()
			defer gw.mu.Unlock()
			return gw.seen[len(gw.seen)-1] == "bcn_new" || now.Sub(t0) > 10*time.Hour
		})
	d.keepSession(context.Background(), context.Background())

	require.Equal(t, "bcn_new", d.token, "joined once the token was written: %v", logs.above(slog.LevelInfo))
	require.NotContains(t, logs.above(slog.LevelWarn), msgRejoinFailed, "an empty file is not a failed token")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"Bearer bcj_new"}, joins, "no join with an empty token")
}

// An operator who revokes a node's credential twice (each time writing a
// join token the daemon re-joins with) ends two sessions in a row, but no
// second daemon is involved: the daemon that re-joined counts the next
// close afresh. It used to take it for "another daemon keeps taking this
// node's session", logged at ERROR, and back off 30 s before dialing
// again (seen on a real node-7: the second re-join came 26 s late).
func TestRejoinStartsTheSupersededCountAfresh(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	var mu sync.Mutex
	var seen []string
	oldOpened := false
	gwSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		seen = append(seen, cred)
		refuse := cred == "bcn_old" && oldOpened
		if cred == "bcn_old" {
			oldOpened = true
		}
		mu.Unlock()
		if refuse {
			http.Error(w, wire.RefusedCredential, http.StatusUnauthorized)
			return
		}
		// The control plane closes the session: its credential was
		// revoked (the gateway closes it as superseded).
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		_, _, _ = ws.Read(r.Context()) // hello
		_ = ws.Close(websocket.StatusPolicyViolation, "session superseded")
	}))
	t.Cleanup(gwSrv.Close)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer bcj_new" {
			http.Error(w, "unexpected", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"token":"bcn_new"}`))
	}))
	t.Cleanup(api.Close)
	tokenFile := filepath.Join(t.TempDir(), "join-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("bcj_new\n"), 0o600))
	gw := &refusingGateway{url: "ws://" + strings.TrimPrefix(gwSrv.URL, "http://")}
	logs := &lockedLog{}
	d := refusedDaemon(t, gw, clock, logs, func(c *Config) { c.ServerURL, c.JoinTokenFile = api.URL, tokenFile },
		func(time.Time) bool { return false })
	j, err := openJournal(d.cfg.StateDir)
	require.NoError(t, err)
	d.journal = j
	var waits []time.Duration
	d.sleepFunc = func(_ context.Context, dur time.Duration) bool {
		clock.advance(dur)
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, dur)
		// Stop at the wait after the new credential's session closed.
		return !(len(seen) > 0 && seen[len(seen)-1] == "bcn_new")
	}
	d.keepSession(context.Background(), context.Background())

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"bcn_old", "bcn_old", "bcn_new"}, seen)
	require.Equal(t, "bcn_new", d.token)
	for _, msg := range logs.above(slog.LevelError) {
		require.NotContains(t, msg, "another daemon keeps taking this node's session")
	}
	// Not the longest backoff (30 times the delay, less 20 % jitter) that
	// two daemons taking the node from each other earn. (This gateway
	// never welcomes, so failed attempts add to the wait as well.)
	last := waits[len(waits)-1]
	require.Less(t, last, time.Duration(0.8*float64(maxBackoffFactor*d.cfg.ReconnectDelay)),
		"the close after a re-join is not taken for a second daemon: %v", waits)
}
