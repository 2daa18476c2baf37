package httpapi

import (
	"regexp"
	"strings"
	"time"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// CapacityRoutes are the write routes of the capacity core: operators build
// and run the fleet (sites, pools, nodes, devices, GPU modes, quotas,
// priority classes and the tenants' allow-lists of them, fair shares, tenant
// suspensions) and
// tenants reserve, extend, release and cancel. Reads are served elsewhere,
// from read models; every response here carries the event position a reader
// passes as minPosition to see its own write.
func CapacityRoutes(h *commands.Handlers) Routes {
	if h == nil {
		panic("httpapi.CapacityRoutes: nil *commands.Handlers")
	}
	return func(r Router) {
		fleetRoutes(r, h)
		reservationRoutes(r, h)
		priorityClassRoutes(r, h)
		fairShareRoutes(r, h)
		tenantSuspensionRoutes(r, h)
	}
}

// requireFields refuses a request missing any field named in pairs
// (name, value, name, value, …): a shape check, so a client learns which
// field it forgot instead of a domain error about an empty value.
func requireFields(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.TrimSpace(pairs[i+1]) == "" {
			return core.Errorf(core.CodeInvalidArgument, "field %q is required", pairs[i])
		}
	}
	return nil
}

// maxAmount is the largest count or size the API takes: 2^53-1, the
// largest integer every JSON client reads exactly. It also keeps sums of
// amounts (a pool's capacity rollup) inside PostgreSQL's bigint, which a
// near-2^63 value would overflow into a database error.
const maxAmount = 1<<53 - 1

// amount is a numeric request field with its JSON name, for checkAmounts.
type amount struct {
	field string
	value int64
}

// checkAmounts refuses an amount above maxAmount. Negative amounts are the
// commands' to refuse, with their own messages.
func checkAmounts(as ...amount) error {
	for _, a := range as {
		if a.value > maxAmount {
			return core.Errorf(core.CodeInvalidArgument, "field %q must be at most %d", a.field, int64(maxAmount))
		}
	}
	return nil
}

// formatTime writes API times: RFC 3339 in UTC.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// taintJSON is a NoSchedule taint, or a toleration of one, as the API
// shows it. The write model stores it as the string "key" or "key=value",
// the form placement compares: a reservation tolerates a taint when it
// lists the same string. NoSchedule is the only effect there is, so it is
// not stored.
type taintJSON struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect,omitempty"`
}

// effectNoSchedule is the one taint effect: no new bookings on the node.
const effectNoSchedule = "NoSchedule"

var (
	taintKeyPattern   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]{0,251}[A-Za-z0-9])?$`)
	taintValuePattern = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$`)
)

// encode checks the taint's shape and returns its stored form. The
// character sets keep "=" out of keys so the stored form parses back
// unambiguously.
func (t taintJSON) encode(field string) (string, error) {
	if t.Key == "" {
		return "", core.Errorf(core.CodeInvalidArgument, "field %q needs a key", field)
	}
	if !taintKeyPattern.MatchString(t.Key) {
		return "", core.Errorf(core.CodeInvalidArgument,
			"%s key %q must be letters, digits and . _ / -, starting and ending with a letter or digit", field, t.Key)
	}
	if !taintValuePattern.MatchString(t.Value) {
		return "", core.Errorf(core.CodeInvalidArgument,
			"%s value %q must be up to 63 letters, digits and . _ -, starting and ending with a letter or digit", field, t.Value)
	}
	if t.Effect != "" && t.Effect != effectNoSchedule {
		return "", core.Errorf(core.CodeInvalidArgument, "%s effect %q is not supported: the only effect is NoSchedule", field, core.Clip(t.Effect, 64))
	}
	if t.Value == "" {
		return t.Key, nil
	}
	return t.Key + "=" + t.Value, nil
}

// encodeTaints encodes a list of taints or tolerations.
func encodeTaints(field string, ts []taintJSON) ([]string, error) {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		s, err := t.encode(field)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// decodeTaints turns stored taints back into the API form. It never fails:
// a taint written by another path without a value is just a key.
func decodeTaints(ss []string) []taintJSON {
	out := make([]taintJSON, 0, len(ss))
	for _, s := range ss {
		k, v, _ := strings.Cut(s, "=")
		out = append(out, taintJSON{Key: k, Value: v, Effect: effectNoSchedule})
	}
	return out
}
