package tracing

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultRemindEvery is how often a FailureStreak repeats that its loop is
// still failing: often enough that a log search over the last minutes of an
// outage finds it, rarely enough that it buries nothing.
const DefaultRemindEvery = time.Minute

// maxDistinctErrors bounds the error messages a streak remembers. Past it,
// every further new message is logged: a streak must never hide a fault
// only because it could not remember having seen it.
const maxDistinctErrors = 16

// FailureStreak logs a polling loop's run of failures as an on-call
// engineer wants to read it: one line at level as the first failure comes
// (with its error), a reminder every RemindEvery while it lasts (how long,
// how many failures, the last error), and one INFO line when the loop
// succeeds again (how long it was down, how many failures).
//
// Why: every background loop polls about once a second, so a database
// outage made each one log its failure once a second, six or eight lines a
// second per process, which buried the lines that said something else. A
// failure is not silenced for being in a streak: an error whose message
// differs from every one seen in the streak is logged in full, at level, as
// it comes.
//
// The zero value is not usable; build one with NewFailureStreak. It is
// safe for concurrent use.
type FailureStreak struct {
	logger *slog.Logger
	msg    string
	level  slog.Level

	// RemindEvery is how often a reminder is logged while the streak
	// lasts; 0 or less means never. NewFailureStreak sets it to
	// DefaultRemindEvery.
	RemindEvery time.Duration
	// Now reads the clock the streak's durations are measured on;
	// time.Now unless a test replaces it before the first use.
	Now func() time.Time

	mu       sync.Mutex
	failing  bool
	since    time.Time // the first failure of the streak
	reminded time.Time // the last line logged about the streak
	failures int
	seen     map[string]bool // the error messages logged in this streak
}

// NewFailureStreak reports a loop's failures to logger under msg (the
// loop's name in the log, "work queue"), the first failure of a streak and
// each new error at level.
func NewFailureStreak(logger *slog.Logger, msg string, level slog.Level) *FailureStreak {
	if logger == nil {
		logger = slog.Default()
	}
	return &FailureStreak{logger: logger, msg: msg, level: level, RemindEvery: DefaultRemindEvery, Now: time.Now}
}

// Failed records one failure, err, and logs it when it starts a streak or
// its message is new to the streak, or a reminder when one is due. attrs
// are added to the line logged with err, as slog's key-value pairs.
func (s *FailureStreak) Failed(err error, attrs ...any) {
	s.mu.Lock()
	now := s.Now()
	text := err.Error()
	switch {
	case !s.failing:
		s.failing, s.since, s.reminded, s.failures = true, now, now, 1
		s.seen = map[string]bool{text: true}
	case !s.seen[text]:
		s.failures++
		s.reminded = now
		if len(s.seen) < maxDistinctErrors {
			s.seen[text] = true
		}
	default:
		s.failures++
		if s.RemindEvery <= 0 || now.Sub(s.reminded) < s.RemindEvery {
			s.mu.Unlock()
			return
		}
		s.reminded = now
		failingFor, failures := now.Sub(s.since), s.failures
		s.mu.Unlock()
		s.logger.Log(context.Background(), s.level, s.msg+": still failing",
			append([]any{"err", err, "failing_for", roundDuration(failingFor), "failures", failures}, attrs...)...)
		return
	}
	s.mu.Unlock()
	s.logger.Log(context.Background(), s.level, s.msg, append([]any{"err", err}, attrs...)...)
}

// Succeeded ends the streak, if there is one, with an INFO line saying how
// long the loop failed and how often. Outside a streak it logs nothing.
func (s *FailureStreak) Succeeded(attrs ...any) {
	s.mu.Lock()
	if !s.failing {
		s.mu.Unlock()
		return
	}
	downFor, failures := s.Now().Sub(s.since), s.failures
	s.failing, s.failures, s.seen = false, 0, nil
	s.mu.Unlock()
	s.logger.Info(s.msg+": recovered",
		append([]any{"failed_for", roundDuration(downFor), "failures", failures}, attrs...)...)
}

// roundDuration says a streak's length as a person reads it ("1m30s"),
// to the millisecond below a second and to the second above.
func roundDuration(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
