// Package eventstream serves the event log to API clients: paged reads
// (GET /v1/events) and the live Server-Sent Events stream, both scoped to
// what the caller may see. The log itself, its order and its snapshot-xmin
// reader live in package outbox; this package adds tenancy, type filters,
// retention (CURSOR_EXPIRED) and the in-memory fan-out that lets one reader
// per process serve every connected client.
package eventstream

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bettercompute/compute/core"
)

// eventTypePattern is the shape of every event type; anything else in a
// filter is a client mistake, caught before it reaches SQL.
var eventTypePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)

// MaxTypes bounds the types filter: it becomes a SQL array and a per-event
// check for every connected client, so it must stay small.
const MaxTypes = 50

// Scope is what one client may see and asked for: every tenant (operators)
// or one tenant, and optionally only some event types. The same Scope
// filters database reads and the broker's live fan-out, so a client sees
// the same events whichever path delivered them.
type Scope struct {
	// AllTenants is set for operators, who see the whole fleet's log,
	// including events that belong to no tenant.
	AllTenants bool
	// Tenant is the only tenant seen when AllTenants is false.
	Tenant string
	// Types keeps only events of these types; empty keeps every type.
	Types []string
	// Subject keeps only the events of one subject (reservations/{id},
	// nodes/{id}, …); empty keeps every subject. Set by WithSubject.
	Subject string
}

// MaxSubjectLength bounds a subject filter: every subject this server
// writes is a kind and one or two ids, far shorter.
const MaxSubjectLength = 256

// WithSubject returns s keeping only the events of subject (empty: s
// unchanged). A subject of events the scope cannot see, another tenant's
// reservation say, is not an error: it reads as no events, as a subject
// nothing was ever written about does, so a tenant learns nothing of what
// others have.
func (s Scope) WithSubject(subject string) (Scope, error) {
	if len(subject) > MaxSubjectLength {
		return Scope{}, core.Errorf(core.CodeInvalidArgument, "subject is %d bytes long, at most %d", len(subject), MaxSubjectLength)
	}
	if !utf8.ValidString(subject) || strings.ContainsFunc(subject, unicode.IsControl) {
		return Scope{}, core.Errorf(core.CodeInvalidArgument, "subject %q is not a subject (e.g. reservations/rsv_…)", core.Clip(subject, 64))
	}
	s.Subject = subject
	return s, nil
}

// ScopeFor returns the scope of actor with an optional types filter.
// Operators see all tenants; anyone else only their own tenant, and an
// actor that is neither an operator nor in a tenant may not read the log.
// Each filtered type must be one of the event catalog's (core.LookupEvent)
// that the actor may see: INVALID_ARGUMENT otherwise, as webhook filters.
func ScopeFor(actor core.Actor, types []string) (Scope, error) {
	if len(types) > MaxTypes {
		return Scope{}, core.Errorf(core.CodeInvalidArgument, "at most %d event types may be given, got %d", MaxTypes, len(types))
	}
	for _, t := range types {
		if !eventTypePattern.MatchString(t) {
			return Scope{}, core.Errorf(core.CodeInvalidArgument, "%q is not an event type (lower-case words joined by dots, e.g. reservation.booked)", core.Clip(t, 64))
		}
		// A filter naming a type the caller can never be shown would match
		// nothing, silently: a typo, or a fleet event asked for by a tenant.
		spec, ok := core.LookupEvent(t)
		if !ok {
			return Scope{}, core.Errorf(core.CodeInvalidArgument, "%q is not an event type this server writes%s",
				core.Clip(t, 64), core.EventTypeHint(t, !actor.IsOperator()))
		}
		if !spec.TenantScoped && !actor.IsOperator() {
			return Scope{}, core.Errorf(core.CodeInvalidArgument, "%q is a fleet event, which only operators see", core.Clip(t, 64))
		}
	}
	types = slices.Clone(types)
	if actor.IsOperator() {
		return Scope{AllTenants: true, Types: types}, nil
	}
	if actor.Tenant == "" {
		return Scope{}, core.Errorf(core.CodePermissionDenied, "the token belongs to no tenant, so it sees no events")
	}
	return Scope{Tenant: actor.Tenant, Types: types}, nil
}

// Matches reports whether e is visible in the scope.
func (s Scope) Matches(e core.Event) bool {
	if !s.AllTenants && e.TenantID != s.Tenant {
		return false
	}
	if s.Subject != "" && e.Subject != s.Subject {
		return false
	}
	return len(s.Types) == 0 || slices.Contains(s.Types, e.Type)
}
