package commands_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// eventsOf are the data of the events of one type and subject, in log
// order, with the tenant each was written for ("" when fleet-wide).
func eventsOf[T any](t *testing.T, f *fixture, typ, subject string) (data []T, tenants []string) {
	t.Helper()
	rows, err := f.d.Pool.Query(f.ctx, `SELECT coalesce(tenant_id, ''), data FROM outbox
		WHERE type = $1 AND subject = $2 ORDER BY txid, seq`, typ, subject)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var tenant string
		var raw []byte
		require.NoError(t, rows.Scan(&tenant, &raw))
		var d T
		require.NoError(t, json.Unmarshal(raw, &d))
		data, tenants = append(data, d), append(tenants, tenant)
	}
	require.NoError(t, rows.Err())
	return data, tenants
}

// classes creates batch (-100, preemptible, 60 s) and prod (1000, not
// preemptible) as the operator, and allows acme batch and prod.
func (f *fixture) classes(t *testing.T) {
	t.Helper()
	grace := int64(60)
	_, err := f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "batch", Value: -100,
		Preemptible: true, GraceSeconds: &grace})
	require.NoError(t, err)
	_, err = f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "prod", Value: 1000})
	require.NoError(t, err)
	_, err = f.h.SetTenantPriorityClasses(f.ctx, operator, commands.SetTenantPriorityClasses{Tenant: "acme",
		Classes: []string{"prod", "batch"}})
	require.NoError(t, err)
}

// An operator creates a class: the row, the answer and one
// priority_class.created, fleet-wide, carrying it; the grace defaults to
// 30 s. A key replays the first answer and writes nothing more.
func TestCreatePriorityClass(t *testing.T) {
	t.Parallel()
	f := setup(t)
	grace := int64(120)
	res, err := f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "batch", Value: -100,
		Preemptible: true, GraceSeconds: &grace, Description: "cheap, may be displaced", IdempotencyKey: "k1"})
	require.NoError(t, err)
	require.Equal(t, "batch", res.Name)
	require.EqualValues(t, -100, res.Value)
	require.True(t, res.Preemptible)
	require.EqualValues(t, 120, res.GraceSeconds)
	require.False(t, res.IsDefault)
	require.EqualValues(t, 1, res.Version)
	require.False(t, res.Position.IsZero())

	row, err := f.d.Q.PriorityClassGet(f.ctx, "batch")
	require.NoError(t, err)
	require.Equal(t, "alice@ops", row.CreatedBy)
	require.EqualValues(t, 120, row.GraceSeconds)
	data, tenants := eventsOf[core.PriorityClassEventData](t, f, core.EventPriorityClassCreated, core.PriorityClassSubject("batch"))
	require.Equal(t, []core.PriorityClassEventData{{Name: "batch", Value: -100, Preemptible: true, GraceSeconds: 120,
		Description: "cheap, may be displaced", Version: 1}}, data)
	require.Equal(t, []string{""}, tenants, "priority_class.created is fleet-wide")

	again, err := f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "batch", Value: -100,
		Preemptible: true, GraceSeconds: &grace, Description: "cheap, may be displaced", IdempotencyKey: "k1"})
	require.NoError(t, err)
	require.Equal(t, res.Position, again.Position, "the key replays the first answer")
	require.Equal(t, 1, f.countEvents(t, core.EventPriorityClassCreated))

	def, err := f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "prod", Value: 1000})
	require.NoError(t, err)
	require.EqualValues(t, core.DefaultGraceSeconds, def.GraceSeconds)
	require.False(t, def.Preemptible)
	f.requireInvariants(t)
}

// A name that exists, a second default class and a bad request are
// refused with their codes, and write nothing; only operators create.
func TestCreatePriorityClassRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "batch", Value: -100})
	require.NoError(t, err)
	tooLong := int64(core.MaxGraceSeconds + 1)
	negative := int64(-1)
	for name, tc := range map[string]struct {
		actor   core.Actor
		cmd     commands.CreatePriorityClass
		code    core.Code
		mention string
	}{
		"duplicate":         {operator, commands.CreatePriorityClass{Name: "batch", Value: 5}, core.CodeConflict, "batch already exists"},
		"the default twice": {operator, commands.CreatePriorityClass{Name: "other", IsDefault: true}, core.CodeConflict, "standard is the default"},
		"member":            {tenantA, commands.CreatePriorityClass{Name: "mine", Value: 1}, core.CodePermissionDenied, "operator"},
		"upper case name":   {operator, commands.CreatePriorityClass{Name: "Gold", Value: 1}, core.CodeInvalidArgument, `"Gold"`},
		"empty name":        {operator, commands.CreatePriorityClass{Value: 1}, core.CodeInvalidArgument, "name"},
		"value too high":    {operator, commands.CreatePriorityClass{Name: "x", Value: core.MaxPriority + 1}, core.CodeInvalidArgument, "value"},
		"value too low":     {operator, commands.CreatePriorityClass{Name: "x", Value: core.MinPriority - 1}, core.CodeInvalidArgument, "value"},
		"grace negative":    {operator, commands.CreatePriorityClass{Name: "x", GraceSeconds: &negative}, core.CodeInvalidArgument, "graceSeconds"},
		"grace too long":    {operator, commands.CreatePriorityClass{Name: "x", GraceSeconds: &tooLong}, core.CodeInvalidArgument, "graceSeconds"},
		// Every role lists classes: no terminal escape or bidi override
		// reaches a tenant's terminal through a description.
		"escape in description": {operator, commands.CreatePriorityClass{Name: "x", Description: "\x1b[2J"}, core.CodeInvalidArgument, "description"},
		"bidi in description":   {operator, commands.CreatePriorityClass{Name: "x", Description: "\u202egold"}, core.CodeInvalidArgument, "description"},
	} {
		_, err := f.h.CreatePriorityClass(f.ctx, tc.actor, tc.cmd)
		require.Equal(t, tc.code, core.CodeOf(err), "%s: %v", name, err)
		require.ErrorContains(t, err, tc.mention, name)
	}
	var n int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM priority_classes").Scan(&n))
	require.Equal(t, 2, n, "standard and batch, nothing else")
	require.Equal(t, 1, f.countEvents(t, core.EventPriorityClassCreated))
	f.requireInvariants(t)
}

// The allow-list is replaced whole, with one event carrying the new set
// and version; the same set again writes nothing; an unknown class, a
// class named twice, an unknown tenant and a member are refused and
// change nothing.
func TestSetTenantPriorityClasses(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "batch", Value: -100, Preemptible: true})
	require.NoError(t, err)
	_, err = f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "prod", Value: 1000})
	require.NoError(t, err)
	subject := core.TenantPriorityClassesSubject("acme")

	res, err := f.h.SetTenantPriorityClasses(f.ctx, operator, commands.SetTenantPriorityClasses{Tenant: "acme",
		Classes: []string{"prod", "batch"}})
	require.NoError(t, err)
	require.Equal(t, []string{"batch", "prod"}, res.Classes)
	require.Equal(t, []string{"batch", "prod", "standard"}, res.Allowed)
	require.Equal(t, "standard", res.DefaultClass)
	require.EqualValues(t, 1, res.Version)
	require.False(t, res.Position.IsZero())

	same, err := f.h.SetTenantPriorityClasses(f.ctx, operator, commands.SetTenantPriorityClasses{Tenant: "acme",
		Classes: []string{"batch", "prod"}})
	require.NoError(t, err)
	require.EqualValues(t, 1, same.Version, "the same set changes nothing")
	require.True(t, same.Position.IsZero())

	for name, tc := range map[string]struct {
		actor core.Actor
		cmd   commands.SetTenantPriorityClasses
		code  core.Code
	}{
		"unknown class":  {operator, commands.SetTenantPriorityClasses{Tenant: "acme", Classes: []string{"gold"}}, core.CodeInvalidArgument},
		"invalid name":   {operator, commands.SetTenantPriorityClasses{Tenant: "acme", Classes: []string{"Gold"}}, core.CodeInvalidArgument},
		"named twice":    {operator, commands.SetTenantPriorityClasses{Tenant: "acme", Classes: []string{"batch", "batch"}}, core.CodeInvalidArgument},
		"unknown tenant": {operator, commands.SetTenantPriorityClasses{Tenant: "initech", Classes: []string{"batch"}}, core.CodeNotFound},
		"bad tenant":     {operator, commands.SetTenantPriorityClasses{Tenant: "Acme!", Classes: []string{}}, core.CodeInvalidArgument},
		"member":         {tenantA, commands.SetTenantPriorityClasses{Tenant: "acme", Classes: []string{}}, core.CodePermissionDenied},
	} {
		_, err := f.h.SetTenantPriorityClasses(f.ctx, tc.actor, tc.cmd)
		require.Equal(t, tc.code, core.CodeOf(err), "%s: %v", name, err)
	}
	_, err = f.h.SetTenantPriorityClasses(f.ctx, operator, commands.SetTenantPriorityClasses{Tenant: "acme",
		Classes: []string{"batch", "gold"}})
	require.ErrorContains(t, err, "priority class gold does not exist")

	cleared, err := f.h.SetTenantPriorityClasses(f.ctx, operator, commands.SetTenantPriorityClasses{Tenant: "acme", Classes: nil})
	require.NoError(t, err)
	require.Equal(t, []string{}, cleared.Classes)
	require.Equal(t, []string{"standard"}, cleared.Allowed)
	require.EqualValues(t, 2, cleared.Version)

	data, tenants := eventsOf[core.TenantPriorityClassesEventData](t, f, core.EventTenantPriorityClassesSet, subject)
	require.Equal(t, []core.TenantPriorityClassesEventData{
		{Tenant: "acme", Classes: []string{"batch", "prod"}, Version: 1},
		{Tenant: "acme", Classes: []string{}, Version: 2},
	}, data)
	require.Equal(t, []string{"acme", "acme"}, tenants, "tenant.priority_classes_set is the tenant's")
	rows, err := f.d.Q.TenantPriorityClassesGet(f.ctx, "globex")
	require.NoError(t, err)
	require.Empty(t, rows.Classes, "another tenant's list is its own")
	require.Zero(t, rows.Version)
	f.requireInvariants(t)
}

// A reservation that names no class gets the default one; one that names
// a class it may use stores it with the class's value and flag, and every
// event of the reservation carries them.
func TestReservePriorityClass(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	f.classes(t)

	plain := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	require.Equal(t, "standard", plain.Reservation.PriorityClass)
	require.Zero(t, plain.Reservation.Priority)
	require.False(t, plain.Reservation.Preemptible)

	no := false
	batch := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, PriorityClass: "batch"})
	require.Equal(t, core.ReservationBooked, batch.Reservation.State)
	require.Equal(t, "batch", batch.Reservation.PriorityClass)
	require.EqualValues(t, -100, batch.Reservation.Priority)
	require.True(t, batch.Reservation.Preemptible)
	prod := f.reserve(t, tenantA, commands.CreateReservation{VCPU: 1, PriorityClass: "prod", Preemptible: &no})
	require.EqualValues(t, 1000, prod.Reservation.Priority)
	require.False(t, prod.Reservation.Preemptible)

	var class string
	var priority int32
	var preemptible bool
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT priority_class, priority, preemptible FROM reservations WHERE id = $1",
		batch.Reservation.ID).Scan(&class, &priority, &preemptible))
	require.Equal(t, "batch", class)
	require.EqualValues(t, -100, priority)
	require.True(t, preemptible)

	// Every event of the reservation carries them, the release's too.
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: batch.Reservation.ID})
	require.NoError(t, err)
	rows, err := f.d.Pool.Query(f.ctx, `SELECT type, data FROM outbox WHERE subject = $1 ORDER BY txid, seq`,
		core.ReservationSubject(batch.Reservation.ID))
	require.NoError(t, err)
	defer rows.Close()
	var types []string
	for rows.Next() {
		var typ string
		var raw []byte
		require.NoError(t, rows.Scan(&typ, &raw))
		var d core.ReservationEventData
		require.NoError(t, json.Unmarshal(raw, &d))
		require.Equal(t, "batch", d.PriorityClass, typ)
		require.NotNil(t, d.Priority, typ)
		require.EqualValues(t, -100, *d.Priority, typ)
		require.NotNil(t, d.Preemptible, typ)
		require.True(t, *d.Preemptible, typ)
		types = append(types, typ)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{core.EventReservationBooked, core.EventReservationReleased}, types)
	f.requireInvariants(t)
}

// The three bad inputs of a reservation's class, and the fourth (asking
// to be preemptible in a class that is not): each is refused with its code
// and reason before anything is written: no reservation, no quota charge,
// no event.
func TestReservePriorityClassRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	f.classes(t)
	_, err := f.h.CreatePriorityClass(f.ctx, operator, commands.CreatePriorityClass{Name: "vip", Value: 5000})
	require.NoError(t, err)
	before, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota("acme", "gpu"))
	require.NoError(t, err)
	events := func() int {
		var n int
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM outbox").Scan(&n))
		return n
	}
	eventsBefore := events()

	no, yes := false, true
	start, end := window(0, 2)
	for name, tc := range map[string]struct {
		class       string
		preemptible *bool
		code        core.Code
		mention     string
	}{
		"unknown class":                {"gold", nil, core.CodeInvalidArgument, "priority class gold does not exist"},
		"malformed class":              {"Gold!", nil, core.CodeInvalidArgument, "does not exist"},
		"class the tenant may not use": {"vip", nil, core.CodePermissionDenied, "tenant acme may not use priority class vip"},
		"not preempted, preemptible":   {"batch", &no, core.CodeInvalidArgument, "priority class batch is preemptible"},
		"preempted, not preemptible":   {"", &yes, core.CodeInvalidArgument, "priority class standard is not preemptible"},
	} {
		for _, key := range []string{"", "key-" + name} {
			_, err := f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, VCPU: 2,
				Start: start, End: end, PriorityClass: tc.class, Preemptible: tc.preemptible, IdempotencyKey: key})
			require.Equal(t, tc.code, core.CodeOf(err), "%s: %v", name, err)
			require.ErrorContains(t, err, tc.mention, name)
		}
	}
	var n int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM reservations").Scan(&n))
	require.Zero(t, n, "no reservation was written")
	after, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota("acme", "gpu"))
	require.NoError(t, err)
	require.Equal(t, before.Used, after.Used, "no quota was charged")
	vcpu, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota("acme", "vcpu"))
	require.NoError(t, err)
	require.Zero(t, vcpu.Used)
	require.Equal(t, eventsBefore, events(), "no event was appended")

	// The class itself still books once allowed.
	_, err = f.h.SetTenantPriorityClasses(f.ctx, operator, commands.SetTenantPriorityClasses{Tenant: "acme",
		Classes: []string{"batch", "prod", "vip"}})
	require.NoError(t, err)
	vip := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, PriorityClass: "vip", Preemptible: &no})
	require.EqualValues(t, 5000, vip.Reservation.Priority)
	f.requireInvariants(t)
}
