package natsink

import (
	"fmt"
	"strings"
)

// SubjectPrefix is the first token of every subject the sink publishes
// on; the stream takes SubjectPrefix + ".>".
const SubjectPrefix = "compute"

// FleetToken stands for the tenant of a fleet-wide event (no tenant). No
// tenant id can map to it: a tenant token's "_" is always followed by two
// hex digits.
const FleetToken = "_fleet"

// Subject is where an event goes: compute.<tenant>.<type>, the type's dots
// kept as tokens of their own, so that wildcards select by tenant
// (compute.acme.>), by kind (compute.*.reservation.>) or both; a
// fleet-wide event's tenant token is FleetToken (compute._fleet.node.lost).
//
// A NATS subject token cannot hold spaces, '.', '*' or '>', so the tenant
// id is escaped: letters, digits and '-' stay, every other byte (and '_'
// itself) becomes '_' and two lower-case hex digits, which keeps distinct
// tenants apart (acme.corp is acme_2ecorp). Event types come from
// core.EventCatalog, whose tokens are letters and '_'; a token of another
// type is escaped the same way except that '_' stays, and an empty token
// becomes "_".
func Subject(tenant, typ string) string {
	t := FleetToken
	if tenant != "" {
		t = escape(tenant, false)
	}
	return SubjectPrefix + "." + t + "." + typeTokens(typ)
}

// typeTokens is an event type as the last tokens of its subject.
func typeTokens(typ string) string {
	parts := strings.Split(typ, ".")
	for i, p := range parts {
		if p = escape(p, true); p == "" {
			p = "_"
		}
		parts[i] = p
	}
	return strings.Join(parts, ".")
}

// escape keeps [A-Za-z0-9-] (and '_' when keepUnderscore) and writes every
// other byte as _xx.
func escape(s string, keepUnderscore bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_' && keepUnderscore:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}
