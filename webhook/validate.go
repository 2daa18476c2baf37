package webhook

import (
	"regexp"
	"slices"

	"github.com/bettercompute/compute/core"
)

// Input limits for endpoints: generous for real use, small enough that a
// tenant cannot store megabytes per endpoint.
const (
	maxEventTypes     = 100
	maxDescriptionLen = 1024
)

var eventTypePattern = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)+$`)

// normalizeEventTypes validates a filter and returns it sorted without
// duplicates: each entry a tenant event type of the catalog. Empty means
// every event type.
func normalizeEventTypes(types []string) ([]string, error) {
	if len(types) > maxEventTypes {
		return nil, core.Errorf(core.CodeInvalidArgument, "eventTypes has more than %d entries", maxEventTypes)
	}
	out := make([]string, 0, len(types))
	for _, t := range types {
		if len(t) > 128 || !eventTypePattern.MatchString(t) {
			return nil, core.Errorf(core.CodeInvalidArgument, "eventTypes entry %q is not an event type such as reservation.booked", t)
		}
		// A filter naming a type no delivery can have would match nothing,
		// silently: a typo, or a fleet event, which webhooks never carry.
		spec, ok := core.LookupEvent(t)
		if !ok {
			return nil, core.Errorf(core.CodeInvalidArgument, "eventTypes entry %q is not an event type this server writes%s",
				t, core.EventTypeHint(t, true))
		}
		if !spec.TenantScoped {
			return nil, core.Errorf(core.CodeInvalidArgument,
				"eventTypes entry %q is a fleet event; webhooks deliver only a tenant's events", t)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// validateDescription accepts at most maxDescriptionLen bytes of printable
// UTF-8 (as a token's identity): the console and the command line show a
// tenant's description to operators, so it holds no control character
// (terminal escape sequences, CR, newline) and no invisible format
// character (a bidirectional override that reorders what follows it).
func validateDescription(d string) error {
	if len(d) > maxDescriptionLen || !core.Printable(d) {
		return core.Errorf(core.CodeInvalidArgument,
			"description must be printable UTF-8 (no control or format characters) of at most %d bytes", maxDescriptionLen)
	}
	return nil
}

func (s *Service) validateURL(u string) error {
	if err := ValidateURL(u, s.cfg.AllowPrivate); err != nil {
		return core.Wrap(core.CodeInvalidArgument, err, err.Error())
	}
	return nil
}
