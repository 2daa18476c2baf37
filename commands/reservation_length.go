package commands

import (
	"fmt"
	"time"

	"github.com/bettercompute/compute/core"
)

// How long a reservation may be: Config.MaxReservationLength, checked by
// reservations.create and reservations.extend, under a ceiling the
// database holds every reservation to.

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
