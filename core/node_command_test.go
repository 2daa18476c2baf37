package core_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// node_command.sent carries the job exactly as the other node job events
// do, plus sessionEpoch and journalId: the keys of NodeCommand's JSON, never
// shadowed by the embedding.
func TestNodeCommandSentEventData(t *testing.T) {
	t.Parallel()
	exit := int32(3)
	at := time.Date(2026, 12, 4, 10, 0, 0, 123, time.UTC)
	job := core.NodeCommand{ID: "cmd_1", Tenant: "acme", NodeID: "n1", AllocationID: "alc_1", IdempotencyKey: "k",
		Kind: "exec", RetrySafe: true, Payload: core.NodeCommandPayload{Script: "true", TimeoutSeconds: 5},
		MinGeneration: 2, State: core.CommandSent, ExitCode: &exit, Output: "o", Reason: "r", Version: 4,
		CreatedAt: at, FinishedAt: &at}
	asMap := func(v any) map[string]any {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return m
	}
	want := asMap(job)
	want["sessionEpoch"], want["journalId"] = float64(7), "j1"
	require.Equal(t, want, asMap(core.NodeCommandSentEventData{NodeCommand: job, SessionEpoch: 7, JournalID: "j1"}))
}
