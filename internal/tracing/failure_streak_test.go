package tracing_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/internal/tracing"
)

// logLine is what the tests read of one JSON log line.
type logLine struct {
	Level      string `json:"level"`
	Msg        string `json:"msg"`
	Err        string `json:"err"`
	FailingFor string `json:"failing_for"`
	FailedFor  string `json:"failed_for"`
	Failures   int    `json:"failures"`
}

func readLines(t *testing.T, out *testenv.LogBuffer) []logLine {
	t.Helper()
	var lines []logLine
	for l := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		if l == "" {
			continue
		}
		var rec logLine
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		lines = append(lines, rec)
	}
	return lines
}

// newStreak returns a streak logging to a buffer, on a clock the test
// moves by hand.
func newStreak(level slog.Level) (*tracing.FailureStreak, *testenv.LogBuffer, func(time.Duration)) {
	out := &testenv.LogBuffer{}
	s := tracing.NewFailureStreak(slog.New(slog.NewJSONHandler(out, nil)), "work queue", level)
	now := time.Date(2026, 12, 6, 22, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	return s, out, func(d time.Duration) { now = now.Add(d) }
}

func TestFailureStreakLogsAnOutageAsAStartRemindersAndAnEnd(t *testing.T) {
	t.Parallel()
	s, out, advance := newStreak(slog.LevelError)
	down := errors.New("acquire leases: failed to connect")

	s.Succeeded()   // no streak: nothing to say
	for range 150 { // 150 polls, a second apart: 2m30s down
		s.Failed(down, "pool", "reconcilers")
		advance(time.Second)
	}
	s.Succeeded()
	s.Succeeded()

	require.Equal(t, []logLine{
		{Level: "ERROR", Msg: "work queue", Err: down.Error()},
		{Level: "ERROR", Msg: "work queue: still failing", Err: down.Error(), FailingFor: "1m0s", Failures: 61},
		{Level: "ERROR", Msg: "work queue: still failing", Err: down.Error(), FailingFor: "2m0s", Failures: 121},
		{Level: "INFO", Msg: "work queue: recovered", FailedFor: "2m30s", Failures: 150},
	}, readLines(t, out), "one line as the outage starts, one a minute while it lasts, one as it ends")
	require.Contains(t, out.String(), `"pool":"reconcilers"`, "the caller's attributes go with the error")
}

func TestFailureStreakLogsEveryErrorNewToTheStreak(t *testing.T) {
	t.Parallel()
	s, out, advance := newStreak(slog.LevelWarn)
	down := errors.New("failed to connect")
	other := errors.New("permission denied for table outbox")

	s.Failed(down)
	advance(time.Second)
	s.Failed(other) // a real fault of its own: said at once
	advance(time.Second)
	s.Failed(down)
	s.Failed(other) // seen in this streak already
	s.Succeeded()
	s.Failed(down) // a new streak starts afresh
	s.Succeeded()

	require.Equal(t, []logLine{
		{Level: "WARN", Msg: "work queue", Err: down.Error()},
		{Level: "WARN", Msg: "work queue", Err: other.Error()},
		{Level: "INFO", Msg: "work queue: recovered", FailedFor: "2s", Failures: 4},
		{Level: "WARN", Msg: "work queue", Err: down.Error()},
		{Level: "INFO", Msg: "work queue: recovered", FailedFor: "0s", Failures: 1},
	}, readLines(t, out))
}

func TestFailureStreakWithoutRemindersSaysOnlyStartAndEnd(t *testing.T) {
	t.Parallel()
	s, out, advance := newStreak(slog.LevelWarn)
	s.RemindEvery = 0
	for range 600 {
		s.Failed(errors.New("down"))
		advance(time.Second)
	}
	s.Succeeded()
	require.Len(t, readLines(t, out), 2)
}
