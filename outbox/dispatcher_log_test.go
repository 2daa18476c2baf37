package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/outbox"
)

// failingTxSink is a TxSink whose every Apply fails.
type failingTxSink struct{ id string }

func (s failingTxSink) ID() string { return s.id }
func (failingTxSink) Apply(context.Context, pgx.Tx, []outbox.Stored) error {
	return errors.New("sink down")
}

// topLevelKeys returns the keys of one JSON object line in order, repeats
// included (encoding/json keeps only the last of a repeated key).
func topLevelKeys(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok, "a log line is a JSON object: %s", line)
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var v json.RawMessage
		require.NoError(t, dec.Decode(&v))
	}
	return keys
}

// A failing dispatcher's log line names its sink once. The webhooks
// dispatcher (a TxDispatcher of one sink) wrote "sink" twice on every
// line: JSON with a repeated key, which log pipelines that parse strictly
// (Elasticsearch, jq --stream users) reject or misread.
func TestDispatcherLogLinesNameTheSinkOnce(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	appendEach(t, d, "l", 1)
	waitVisible(t, d, 1)

	for name, build := range map[string]func(*slog.Logger) *outbox.Dispatcher{
		"sink": func(l *slog.Logger) *outbox.Dispatcher {
			return outbox.NewDispatcher(d.Pool, "w1", funcSink{id: "plain", deliver: func(context.Context, []outbox.Stored) error {
				return errors.New("sink down")
			}}, l)
		},
		"tx sink": func(l *slog.Logger) *outbox.Dispatcher {
			return outbox.NewTxDispatcher(d.Pool, "w1", failingTxSink{id: "webhooks"}, l)
		},
	} {
		t.Run(name, func(t *testing.T) {
			var out testenv.LogBuffer
			disp := build(slog.New(slog.NewJSONHandler(&out, nil)))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); disp.Run(ctx, waitFor, nil) }()
			require.Eventually(t, func() bool { return strings.Contains(out.String(), `"msg":"outbox dispatch"`) },
				waitFor, 10*time.Millisecond, "the failing batch is logged")
			cancel()
			<-done

			for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
				keys := topLevelKeys(t, line)
				seen := map[string]bool{}
				for _, k := range keys {
					require.False(t, seen[k], "key %q repeated in %s", k, line)
					seen[k] = true
				}
				require.True(t, seen["sink"], "the line names the sink: %s", line)
			}
		})
	}
}

// A sink that fails twenty polls in a row, then works, is two lines of the
// dispatcher's log: the first failure and the recovery. Every failed poll
// was a line before (once a second, per dispatcher, for a whole database
// outage).
func TestDispatcherLogsARunOfFailuresOnce(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	appendEach(t, d, "l", 1)
	waitVisible(t, d, 1)

	var calls atomic.Int32
	delivered := make(chan struct{})
	sink := funcSink{id: "flaky", deliver: func(context.Context, []outbox.Stored) error {
		if calls.Add(1) <= 20 {
			return errors.New("sink down")
		}
		select {
		case <-delivered:
		default:
			close(delivered)
		}
		return nil
	}}
	var out testenv.LogBuffer
	disp := outbox.NewDispatcher(d.Pool, "w1", sink, slog.New(slog.NewJSONHandler(&out, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); disp.Run(ctx, time.Millisecond, nil) }()
	select {
	case <-delivered:
	case <-time.After(waitFor):
		t.Fatal("the sink never got a batch through")
	}
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "outbox dispatch: recovered") },
		waitFor, time.Millisecond, "the batch that got through ends the streak")
	cancel()
	<-done

	require.Equal(t, []string{"ERROR outbox dispatch", "INFO outbox dispatch: recovered"}, out.LevelsAndMessages(t))
	require.Contains(t, out.String(), `"failures":20`)
}
