package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/httpapi"
)

// What a tenant sees of a command to a node that never came back: GET
// /v1/commands/{id} answers timed-out with the reason, its instance is
// failed, and /v1/events lists node_command.timed_out with the command.
// Before, the command stayed queued and the instance requested for ever.
func TestNodeJobTimeoutOverHTTP(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	events := func(r httpapi.Router) {
		broker := eventstream.NewBroker(r.Deps.Pool, eventstream.BrokerOptions{})
		ran := make(chan struct{})
		go func() { defer close(ran); broker.Run(ctx, 5*time.Millisecond, nil) }()
		t.Cleanup(func() { cancel(); <-ran })
		httpapi.EventRoutes(httpapi.EventAPI{Broker: broker, Reader: eventstream.NewReader(r.Deps.Pool)})(r)
	}
	f, node, rsv := setupCommands(t, events)
	h := commands.New(f.pg.Pool, commands.Config{})

	var cmd, got commandJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/commands", f.member,
		map[string]any{"nodeId": node, "kind": "exec", "payload": map[string]any{"script": "true"}},
		map[string]string{"Idempotency-Key": "k1"}).decode(t, &cmd)
	var inst, instGot instanceJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/instances", f.member,
		map[string]any{"reservationId": rsv}, nil).decode(t, &inst)

	// The node's daemon never connects: the node becomes unreachable, and
	// an hour later its jobs time out.
	require.NoError(t, commandstest.SweepLiveness(ctx, h))
	for d := time.Duration(0); d < commands.NoSessionAfter+2*commands.LivenessSweepEvery; d += commands.LivenessSweepEvery {
		f.pg.AdvanceSimClock(t, commands.LivenessSweepEvery)
		require.NoError(t, commandstest.SweepLiveness(ctx, h))
	}
	f.ok(t, http.StatusOK, http.MethodGet, "/v1/commands/"+cmd.ID, f.member, nil, nil).decode(t, &got)
	require.Equal(t, "queued", got.State, "unreachable, but not for long")
	// The control plane stays up and sweeps: a sweep at least every
	// OutageThreshold, or the gap would be an outage, which restarts the count.
	for d := time.Duration(0); d < commands.NodeJobTimeout; d += commands.OutageThreshold {
		f.pg.AdvanceSimClock(t, commands.OutageThreshold)
		require.NoError(t, commandstest.SweepLiveness(ctx, h))
	}

	var body struct {
		commandJSON
		Reason     string     `json:"reason"`
		FinishedAt *time.Time `json:"finishedAt"`
	}
	f.ok(t, http.StatusOK, http.MethodGet, "/v1/commands/"+cmd.ID, f.member, nil, nil).decode(t, &body)
	require.Equal(t, "timed-out", body.State)
	require.Contains(t, body.Reason, "unreachable since")
	require.NotNil(t, body.FinishedAt)
	f.ok(t, http.StatusOK, http.MethodGet, "/v1/instances/"+inst.ID, f.member, nil, nil).decode(t, &instGot)
	require.Equal(t, "failed", instGot.State)

	var page eventsPage
	require.Eventually(t, func() bool {
		page = eventsPage{}
		f.ok(t, http.StatusOK, http.MethodGet, "/v1/events?types="+core.EventNodeCommandTimedOut, f.member, nil, nil).
			decode(t, &page)
		return len(page.Items) == 2
	}, eventsWait, 5*time.Millisecond)
	subjects := []string{page.Items[0].Subject, page.Items[1].Subject}
	require.Contains(t, subjects, core.NodeCommandSubject(cmd.ID))
}
