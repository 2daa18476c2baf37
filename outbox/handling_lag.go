package outbox

import "time"

// HandlingLag measures how long visible events wait for the sinks: how long
// ago the slowest working sink's cursor was last seen before an event that
// was visible then. Unlike the age of the oldest unhandled event
// (ReadSinkLag), it leaves out the wait for the frontier: an event is
// visible only once every transaction that began before it ended, about
// one command's duration under load, which a sink that keeps up shows as
// much as one that does not. The API's command admission follows it, so
// that it sheds load when the sinks fall behind, not because commands run
// concurrently. Its resolution is the interval between observations.
//
// Not safe for concurrent use: one follower observes.
type HandlingLag struct {
	// marks are heads seen at earlier observations, oldest first, that
	// the slowest sink had not passed at the last one.
	marks []mark
}

// maxMarks bounds the heads kept: 12.8 s of them at 100 ms a tick.
const maxMarks = 128

type mark struct {
	at   time.Time
	head Position
}

// Observe records the visible head at now and the slowest working sink's
// cursor (ok false: no sink is working) and returns how long the oldest
// head the sink has not passed has been visible; 0 when it has passed
// every head seen before now.
func (l *HandlingLag) Observe(now time.Time, head, slowest Position, ok bool) time.Duration {
	if !ok {
		l.marks = l.marks[:0] // no sink works: nothing waits on one
		return 0
	}
	drop := 0
	for drop < len(l.marks) && !slowest.Less(l.marks[drop].head) {
		drop++
	}
	l.marks = append(l.marks[:0], l.marks[drop:]...)
	var lag time.Duration
	if len(l.marks) > 0 {
		lag = now.Sub(l.marks[0].at)
	}
	// Past maxMarks (a sink behind for longer than the admission cares
	// to tell apart), later heads are not marked: the lag then reads 0
	// once the marked ones are passed, and marks again from there.
	if slowest.Less(head) && len(l.marks) < maxMarks && (len(l.marks) == 0 || l.marks[len(l.marks)-1].head.Less(head)) {
		l.marks = append(l.marks, mark{at: now, head: head})
	}
	return lag
}
