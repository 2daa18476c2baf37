package agent

import (
	"context"
	"time"

	"github.com/coder/websocket"

	"github.com/bettercompute/compute/wire"
)

// A report the gateway took but did not acknowledge while the session
// stays open (its transaction recording it failed: a deadlock, a
// serialization failure, the database briefly away) used to wait for the
// next session, which may be days away on a healthy connection: the
// instance showed `running` all that time. So while a session whose
// gateway acknowledges reports is open, a report unacknowledged for
// reportResendAfter on the daemon's clock is sent again on it, then after
// twice as long each time, up to reportResendMax, for as long as it stays
// unacknowledged; the reports due together go in the order they were
// kept. A duplicate is harmless: the control plane records an instance's
// end once, and acknowledges it again.

// reportResendAfter is how long a report sent on a session goes
// unacknowledged before it is sent again on it; reportResendMax bounds
// the backoff between later tries.
const (
	reportResendAfter = 30 * time.Second
	reportResendMax   = 8 * time.Minute
)

// resendTimer is when a kept report was last sent on the current session,
// and how long it may then go unacknowledged before it is sent again.
type resendTimer struct {
	sent  time.Time
	after time.Duration
}

// sentNow times m's next resend from now; callers hold d.mu, and do it
// only on a session whose gateway acknowledges reports.
func (d *daemon) sentNow(m wire.Message) {
	if d.resends == nil {
		d.resends = map[string]resendTimer{}
	}
	d.resends[m.ReportID] = resendTimer{sent: d.now(), after: reportResendAfter}
}

// resendUnacknowledged sends again, on ws, the reports that have gone
// unacknowledged too long, until the session ends. It waits on the
// daemon's clock (sleep).
func (d *daemon) resendUnacknowledged(ctx context.Context, ws *websocket.Conn) {
	for {
		due, wait := d.dueReports(ws)
		for _, m := range due {
			if err := send(ctx, ws, m); err != nil {
				d.log.Warn("report sent again: the next session will", "type", m.Type, "err", err)
				return // the session is ending
			}
		}
		if len(due) > 0 {
			d.log.Warn("sent again reports the gateway has not acknowledged", "reports", len(due))
		}
		if !d.sleep(ctx, wait) {
			return
		}
	}
}

// dueReports is the reports kept whose resend on ws is due now, in order,
// each timed for its next one, and how long until the next is due, at most
// reportResendAfter: a report made meanwhile is timed from when it was
// sent, and a wait as long as the longest backoff would delay it.
func (d *daemon) dueReports(ws *websocket.Conn) ([]wire.Message, time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	wait := reportResendAfter
	if d.current != ws || !d.acks {
		return nil, wait // the session is ending
	}
	now := d.now()
	var due []wire.Message
	for _, m := range d.unsent {
		r, ok := d.resends[m.ReportID]
		if !ok {
			d.sentNow(m) // not timed yet: from now
			r = d.resends[m.ReportID]
		}
		if !now.Before(r.sent.Add(r.after)) {
			due = append(due, m)
			r = resendTimer{sent: now, after: min(2*r.after, reportResendMax)}
			d.resends[m.ReportID] = r
		}
		wait = min(wait, r.sent.Add(r.after).Sub(now))
	}
	return due, wait
}
