package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/client"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

var bootstrapPrinted = regexp.MustCompile(`(?s)this first start issued an operator token.*?\n\s+(bc_\S+)`)

// `compute events tail` resumes without gaps after the server restarts:
// it prints every event of the log once, in log order, including those
// committed while it was disconnected. The server's first start on the
// empty database prints the bootstrap operator token the test uses; its
// second start prints none.
func TestEventsTailResumesAcrossARestart(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	d.UseSimClock(t, false) // a real server on real time
	dir := scratchDir(t)
	bin := buildCompute(t, dir)
	addr := freeAddr(t)
	base := "http://" + addr
	env := baseEnv(dir, "DATABASE_URL="+d.URL, "COMPUTE_ADDR="+addr, "COMPUTE_GATEWAY_ADDR="+freeAddr(t),
		"COMPUTE_LOG_LEVEL=warn", "COMPUTE_POLL_INTERVAL=200ms")

	serve := startProc(t, dir, env, bin, "serve")
	var token string
	serve.waitFor(t, "the bootstrap token and /healthz", startTimeout, func() bool {
		if m := bootstrapPrinted.FindStringSubmatch(serve.out()); m != nil {
			token = m[1]
		}
		return token != "" && healthy(base)
	})
	api, err := client.New(base, token, client.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	createSites := func(from, to int) {
		for i := from; i <= to; i++ {
			_, err := api.CreateSiteWithResponse(ctx, nil, client.CreateSiteRequest{ID: fmt.Sprintf("site-%d", i), Name: "tail test"})
			require.NoError(t, err)
		}
	}

	tail := startProc(t, dir, baseEnv(dir, "COMPUTE_SERVER="+base, "COMPUTE_TOKEN="+token),
		bin, "events", "tail", "--from-start", "--type", "site.created", "-o", "json")
	var printed []client.EventEnvelope
	waitPrinted := func(n int) {
		t.Helper()
		deadline := time.After(time.Minute)
		for len(printed) < n {
			select {
			case line := <-tail.lines:
				var ev client.EventEnvelope
				require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
				printed = append(printed, ev)
			case <-tail.exited:
				t.Fatalf("events tail exited: %v\n%s", tail.cmd.ProcessState, tail.errOut())
			case <-deadline:
				t.Fatalf("events tail printed %d events, want %d\nstderr: %s", len(printed), n, tail.errOut())
			}
		}
	}
	createSites(1, 3)
	waitPrinted(3)

	// Restart the server; create events before the tail is back.
	serve.stop(t, syscall.SIGTERM)
	require.True(t, serve.cmd.ProcessState.Success(), "serve: %v", serve.cmd.ProcessState)
	serve = startProc(t, dir, env, bin, "serve")
	serve.waitFor(t, "/healthz after the restart", startTimeout, func() bool { return healthy(base) })
	createSites(4, 6)
	waitPrinted(6)
	createSites(7, 7)
	waitPrinted(7)
	require.Contains(t, tail.errOut(), "resuming in", "the tail saw the stream end")
	require.NotContains(t, serve.out(), "first start issued", "only the first start prints a bootstrap token")

	// What it printed is the log: each site.created once, in log order.
	page, err := api.ListEventsWithResponse(ctx, &client.ListEventsParams{After: new(string), Types: &[]string{"site.created"}})
	require.NoError(t, err)
	require.Len(t, page.JSON200.Items, 7)
	for i, ev := range page.JSON200.Items {
		require.Equal(t, ev.ID, printed[i].ID, "event %d", i)
		require.Equal(t, fmt.Sprintf("sites/site-%d", i+1), printed[i].Subject, "event %d", i)
	}
	select {
	case line := <-tail.lines:
		t.Fatalf("events tail printed more than the log holds: %s", line)
	default:
	}
	t.Logf("events tail said: %s", tail.errOut())
	tail.stop(t, syscall.SIGINT)
	require.True(t, tail.cmd.ProcessState.Success(), "an interrupted tail exits 0: %v", tail.cmd.ProcessState)

	// Its JSON lines carry no cursor; interrupted, it says where to resume
	// (docs/cli.md), and a tail started there prints what came after the
	// last event it printed, and nothing before (the cursor may be a
	// heartbeat's, past the last site.created).
	resume := regexp.MustCompile(`resume where it stopped with --after ([0-9a-f]{32}) --type site.created\n`).FindStringSubmatch(tail.errOut())
	require.NotNil(t, resume, "the interrupted tail named its cursor: %s", tail.errOut())
	createSites(8, 8)
	tail = startProc(t, dir, baseEnv(dir, "COMPUTE_SERVER="+base, "COMPUTE_TOKEN="+token),
		bin, "events", "tail", "--after", resume[1], "--type", "site.created", "-o", "json")
	printed = printed[:0]
	waitPrinted(1)
	require.Equal(t, "sites/site-8", printed[0].Subject, "the tail resumed after site-7")
	tail.stop(t, syscall.SIGINT)
	require.True(t, tail.cmd.ProcessState.Success(), "an interrupted tail exits 0: %v", tail.cmd.ProcessState)
}
