package natsink_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/natsink"
)

// Subjects are compute.<tenant>.<type> with the type's dots kept; a
// fleet-wide event's tenant token is _fleet; a tenant id's unsafe bytes
// are escaped, so distinct tenants never share a subject, a tenant named
// fleet included.
func TestSubject(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ tenant, typ, want string }{
		{"acme", "reservation.booked", "compute.acme.reservation.booked"},
		{"", "node.lost", "compute._fleet.node.lost"},
		{"fleet", "node.lost", "compute.fleet.node.lost"},
		{"_fleet", "x.y", "compute._5ffleet.x.y"},
		{"acme.corp", "gpu.mode_changed", "compute.acme_2ecorp.gpu.mode_changed"},
		{"a b*>", "t", "compute.a_20b_2a_3e.t"},
		{"acme_2ecorp", "t", "compute.acme_5f2ecorp.t"},
		{"Ünï", "t", "compute._c3_9cn_c3_af.t"},
		{"acme", "odd..type*", "compute.acme.odd._.type_2a"},
	} {
		require.Equal(t, c.want, natsink.Subject(c.tenant, c.typ), "tenant %q type %q", c.tenant, c.typ)
	}
}

// Every event type of the catalog keeps its name as its subject's tokens.
func TestSubjectKeepsCatalogTypes(t *testing.T) {
	t.Parallel()
	require.NotEmpty(t, core.EventCatalog())
	for _, spec := range core.EventCatalog() {
		require.Equal(t, "compute.acme."+spec.Type, natsink.Subject("acme", spec.Type))
		require.Equal(t, "compute._fleet."+spec.Type, natsink.Subject("", spec.Type))
	}
}
