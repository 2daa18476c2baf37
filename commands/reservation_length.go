package commands

import (
	"fmt"
	"time"

	"github.com/bettercompute/compute/core"
)

// How long a reservation may be: Config.MaxReservationLength, checked by
// reservations.create and reservations.extend, under a ceiling the
// database holds every reservation to; and Config.MinReservationLength,
// checked by reservations.create.

// MaxReservationLengthCeiling is the longest window any configuration
// allows, and what the reservations table's reservations_max_length
// constraint holds every write to: 366 days. A window's usage is kept by
// the hour (rm_usage_windows), so its length bounds what one event of it
// costs the projections.
const MaxReservationLengthCeiling = 366 * 24 * time.Hour

func (h *Handlers) maxReservationLength() time.Duration {
	return min(orDefault(h.cfg.MaxReservationLength, DefaultMaxReservationLength), MaxReservationLengthCeiling)
}

// checkLength refuses a window [start, end) longer than the configured
// maximum.
func (h *Handlers) checkLength(start, end time.Time) error {
	if limit := h.maxReservationLength(); end.Sub(start) > limit {
		return core.Errorf(core.CodeInvalidArgument, "a reservation is at most %s long; [%s, %s) is longer",
			lengthText(limit), storedTime(start), storedTime(end))
	}
	return nil
}

func (h *Handlers) minReservationLength() time.Duration {
	return min(orDefault(h.cfg.MinReservationLength, DefaultMinReservationLength), h.maxReservationLength())
}

// checkMinLength refuses a window [start, end), as the request sent it,
// shorter than the configured minimum. A window of a microsecond (an
// off-by-one in a tenant's script) was booked: it charged a quota slot
// and queued node work, and its end passed before its activation ran, so
// it expired without ever running, billed 0 or 1 ms. At a minute, a window
// outlasts its activation and the trip of its assignment to the node (well
// under a second), and a running one can still be extended (ExtendLead,
// 10 s, before its end). It is the window as sent, not as booked: a window
// that starts "now" is booked from when the request arrives, a few
// milliseconds short of what was asked, and a request for exactly the
// minimum from now must not be refused for its transit. An extension only
// moves the end later, so it never makes a window shorter.
func (h *Handlers) checkMinLength(start, end time.Time) error {
	if limit := h.minReservationLength(); end.Sub(start) < limit {
		return core.Errorf(core.CodeInvalidArgument, "a reservation is at least %s long; [%s, %s) is %s",
			lengthText(limit), storedTime(start), storedTime(end), end.Sub(start))
	}
	return nil
}

// checkHorizon refuses a start more than the configured horizon after
// now: a tenant books capacity for the fleet as it will be within the
// horizon, not for the year 9999, and operators plan retirements and
// maintenance knowing how far ahead bookings can reach.
func (h *Handlers) checkHorizon(start, now time.Time) error {
	if limit := orDefault(h.cfg.MaxBookingHorizon, DefaultMaxBookingHorizon); start.Sub(now) > limit {
		return core.Errorf(core.CodeInvalidArgument, "a reservation may start at most %s ahead; %s is later",
			lengthText(limit), storedTime(start))
	}
	return nil
}

// storedTime writes a reservation's time in a message as it is stored,
// to the microsecond, in UTC. To the second, a refusal could contradict
// itself: a window of 90 days and 0.4 s whose start was booked at
// 06:15:04.410121 read "at most 90 days long; [06:15:04Z, …06:15:04Z) is
// longer", and an end 0.5 s short of the current one "newEnd 07:09:37Z is
// not after the current end 07:09:37Z".
func storedTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// lengthText is d in days when it is whole days ("90 days"), else as Go
// writes a duration.
func lengthText(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}
