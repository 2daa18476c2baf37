package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/docs"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/webhook"
)

// The event catalogue of docs/openapi.yaml: components/schemas/TypedEvent
// is a oneOf of EventEnvelope variants with a discriminator on `type` whose
// mapping names every event type; each variant pins `type` (enum) and
// `data` (a $ref to the payload schema).
const catalogSchema = "TypedEvent"

// notDriven are the event types TestEventSchemaPayloads cannot produce, and
// why. Every other documented type must be produced there and checked.
var notDriven = map[string]string{
	core.EventReservationFailed:       "written when a daemon refuses an assignment (commands/assignments_test.go covers it)",
	core.EventNodeAssignmentSent:      "written by the gateway's dispatch to a connected daemon",
	core.EventNodeAssignmentRunning:   "reported by a connected daemon",
	core.EventNodeAssignmentSucceeded: "reported by a connected daemon",
	core.EventNodeAssignmentFailed:    "reported by a connected daemon",
	core.EventWebhookEndpointDisabled: "written by the delivery worker (410, or failing too long); " +
		"same payload as the other webhook_endpoint.* events",
	core.EventNodeCommandSent:      "written by the gateway's dispatch to a connected daemon",
	core.EventNodeCommandRunning:   "reported by a connected daemon",
	core.EventNodeCommandSucceeded: "reported by a connected daemon",
	core.EventNodeCommandFailed:    "reported by a connected daemon",
	core.EventNodeCommandCancelled: "written by the gateway's dispatch to a connected daemon " +
		"(commands/TestReleasedPreemptorsHeldStartIsNeverSent covers it); same payload as the other node_command.* events",
	core.EventNodeCommandTimedOut: "written by the liveness sweep an hour after a node became unreachable " +
		"(commands/TestNodeJobTimesOutOnUnreachableNode and httpapi/TestNodeJobTimeoutOverHTTP cover it); " +
		"same payload as the other node_command.* events",
	core.EventInstanceProvisioning: "reported by a connected daemon",
	core.EventInstanceRunning:      "reported by a connected daemon",
	core.EventInstanceStopped:      "reported by a connected daemon",
	core.EventInstanceFailed:       "reported by a connected daemon",
	core.EventInstanceSucceeded:    "reported by a connected daemon",
}

// openAPISchemas is components/schemas of docs/openapi.yaml as plain maps.
type openAPISchemas map[string]any

func loadSchemas(t *testing.T) openAPISchemas {
	t.Helper()
	var spec struct {
		Components struct {
			Schemas map[string]any `yaml:"schemas"`
		} `yaml:"components"`
	}
	require.NoError(t, yaml.Unmarshal(docs.OpenAPI, &spec))
	require.NotEmpty(t, spec.Components.Schemas)
	return spec.Components.Schemas
}

// resolve follows a local $ref ("#/components/schemas/X") to its schema.
func (s openAPISchemas) resolve(t *testing.T, schema map[string]any) (string, map[string]any) {
	t.Helper()
	ref, ok := schema["$ref"].(string)
	if !ok {
		return "", schema
	}
	name, ok := strings.CutPrefix(ref, "#/components/schemas/")
	require.True(t, ok, "only local schema refs are supported: %s", ref)
	target, ok := s[name].(map[string]any)
	require.True(t, ok, "%s points at no schema", ref)
	return name, target
}

// object merges the properties and required lists of a schema and of
// everything it composes with allOf (later members win).
func (s openAPISchemas) object(t *testing.T, schema map[string]any) (props map[string]map[string]any, required []string) {
	t.Helper()
	_, schema = s.resolve(t, schema)
	props = map[string]map[string]any{}
	if all, ok := schema["allOf"].([]any); ok {
		for _, m := range all {
			p, r := s.object(t, m.(map[string]any))
			maps.Copy(props, p)
			required = append(required, r...)
		}
	}
	if p, ok := schema["properties"].(map[string]any); ok {
		for k, v := range p {
			props[k] = v.(map[string]any)
		}
	}
	for _, r := range asSlice(schema["required"]) {
		required = append(required, r.(string))
	}
	slices.Sort(required)
	return props, slices.Compact(required)
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// catalog maps every documented event type to the name of its data schema.
func (s openAPISchemas) catalog(t *testing.T) map[string]string {
	t.Helper()
	root, ok := s[catalogSchema].(map[string]any)
	require.True(t, ok, "components/schemas/%s is missing", catalogSchema)
	disc, ok := root["discriminator"].(map[string]any)
	require.True(t, ok, "%s has no discriminator", catalogSchema)
	require.Equal(t, "type", disc["propertyName"])
	mapping, ok := disc["mapping"].(map[string]any)
	require.True(t, ok, "%s's discriminator has no mapping", catalogSchema)

	var variants []string
	for _, v := range asSlice(root["oneOf"]) {
		variants = append(variants, v.(map[string]any)["$ref"].(string))
	}
	slices.Sort(variants)
	var targets []string
	out := map[string]string{}
	for typ, ref := range mapping {
		targets = append(targets, ref.(string))
		name, variant := s.resolve(t, map[string]any{"$ref": ref})
		props, required := s.object(t, variant)
		require.Contains(t, required, "data", "variant %s", name)
		require.Contains(t, asSlice(props["type"]["enum"]), typ,
			"variant %s, which the mapping names for %s, does not list it in its type enum", name, typ)
		dataName, _ := s.resolve(t, props["data"])
		require.NotEmpty(t, dataName, "variant %s: data must be a $ref to a payload schema", name)
		out[typ] = dataName
	}
	slices.Sort(targets)
	require.Equal(t, variants, slices.Compact(targets), "%s: oneOf and discriminator mapping name different variants", catalogSchema)
	// A variant's enum lists exactly the types mapped to it.
	for _, ref := range variants {
		name, variant := s.resolve(t, map[string]any{"$ref": ref})
		props, _ := s.object(t, variant)
		for _, typ := range asSlice(props["type"]["enum"]) {
			require.Equal(t, ref, mapping[typ.(string)], "variant %s lists %s, which the mapping sends elsewhere", name, typ)
		}
	}
	return out
}

// The catalogue of docs/openapi.yaml and core.EventCatalog name the same
// event types, both ways (core's own test checks the catalog against its
// Event* constants).
func TestEventSchemaCatalog(t *testing.T) {
	t.Parallel()
	known := core.EventTypes()
	s := loadSchemas(t)
	documented := slices.Sorted(maps.Keys(s.catalog(t)))
	for _, typ := range known {
		require.Contains(t, documented, typ,
			"event type %s is not documented: add it to %s in docs/openapi.yaml with its data schema", typ, catalogSchema)
	}
	for _, typ := range documented {
		require.Contains(t, known, typ,
			"docs/openapi.yaml documents event type %s, which core.EventCatalog does not declare", typ)
	}
	for typ := range notDriven {
		require.Contains(t, known, typ, "notDriven names unknown event type %s", typ)
	}

	env, ok := s["EventEnvelope"].(map[string]any)
	require.True(t, ok)
	props, _ := s.object(t, env)
	require.Contains(t, props["data"]["description"], "#/components/schemas/"+catalogSchema,
		"EventEnvelope's data should point readers at the catalogue")
}

// undeclaredData are documented data properties that no catalog payload
// struct declares, per event type, because the writer adds them to the
// struct's JSON (commands.emitNodeJob for node_command.sent).
var undeclaredData = map[string][]string{
	core.EventNodeCommandSent: {"sessionEpoch", "journalId"},
}

// Where core.EventCatalog names a payload struct, its JSON fields are the
// documented data schema's properties, both ways: every field documented
// with a matching JSON type, required exactly when it is not omitempty,
// and every documented property a field of a type using that schema.
func TestEventSchemaPayloadStructs(t *testing.T) {
	t.Parallel()
	s := loadSchemas(t)
	cat := s.catalog(t)
	bySchema := map[string][]core.EventSpec{}
	for _, e := range core.EventCatalog() {
		bySchema[cat[e.Type]] = append(bySchema[cat[e.Type]], e)
	}
	for name, specs := range bySchema {
		props, required := s.object(t, s[name].(map[string]any))
		covered := map[string]bool{}
		for _, e := range specs {
			for _, k := range undeclaredData[e.Type] {
				require.Contains(t, props, k, "undeclaredData: %s is not a property of %s", k, name)
				require.NotContains(t, required, k, "%s.%s is added to some events only: it cannot be required", name, k)
				covered[k] = true
			}
			if e.Payload == nil {
				continue
			}
			fields := jsonFields(e.Payload)
			var mandatory []string
			for _, f := range fields {
				where := fmt.Sprintf("%s (%s, data of %s).%s", name, e.Payload, e.Type, f.name)
				p, ok := props[f.name]
				require.True(t, ok, "%s is not documented", where)
				_, p = s.resolve(t, p)
				if types := typesOf(p); len(types) > 0 {
					for _, want := range f.types {
						require.Contains(t, types, want, "%s: documented as %v", where, types)
					}
				}
				if !f.omitempty {
					mandatory = append(mandatory, f.name)
				}
				covered[f.name] = true
			}
			slices.Sort(mandatory)
			require.Equal(t, mandatory, required,
				"%s: required properties vs the fields of %s that are not omitempty", name, e.Payload)
		}
		if !slices.ContainsFunc(specs, func(e core.EventSpec) bool { return e.Payload != nil }) {
			continue // built as a map: TestEventSchemaPayloads checks what is written
		}
		for k := range props {
			require.True(t, covered[k], "%s documents %s, which no payload struct of its event types has", name, k)
		}
	}
}

// jsonField is one top-level key of a struct's JSON.
type jsonField struct {
	name      string
	omitempty bool
	types     []string // the JSON types its values take
}

// jsonFields lists the keys encoding/json writes for t (embedded structs
// without a tag are flattened).
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		omitempty := slices.Contains(strings.Split(opts, ","), "omitempty")
		out = append(out, jsonField{name: name, omitempty: omitempty, types: jsonTypesOf(f.Type, omitempty)})
	}
	return out
}

var timeType = reflect.TypeFor[time.Time]()

// jsonTypesOf is the JSON types encoding/json writes for a value of t; a
// nil pointer, slice or map is null unless omitempty drops it.
func jsonTypesOf(t reflect.Type, omitempty bool) []string {
	nullable := func(typ string) []string {
		if omitempty {
			return []string{typ}
		}
		return []string{typ, "null"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		if omitempty {
			return jsonTypesOf(t.Elem(), false)
		}
		return append(jsonTypesOf(t.Elem(), false), "null")
	case reflect.String:
		return []string{"string"}
	case reflect.Bool:
		return []string{"boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return []string{"integer"}
	case reflect.Float32, reflect.Float64:
		return []string{"number"}
	case reflect.Slice, reflect.Array:
		return nullable("array")
	case reflect.Map:
		return nullable("object")
	case reflect.Struct:
		if t == timeType {
			return []string{"string"}
		}
		return []string{"object"}
	}
	return nil // interfaces and the like: any JSON type
}

// The events real commands write carry exactly the documented data: every
// required property, no undocumented key, and values of the documented
// JSON types. They carry a tenant id exactly when core.EventCatalog says
// their type is tenant-scoped.
func TestEventSchemaPayloads(t *testing.T) {
	t.Parallel()
	s := loadSchemas(t)
	cat := s.catalog(t)
	seen := map[string]int{}
	for _, ev := range driveEvents(t) {
		name, ok := cat[ev.Type]
		require.True(t, ok, "event %s is not documented", ev.Type)
		spec, ok := core.LookupEvent(ev.Type)
		require.True(t, ok, "event %s is not in core.EventCatalog", ev.Type)
		require.Equal(t, spec.TenantScoped, ev.Tenant != "",
			"event %s was written with tenant %q; core.EventCatalog says TenantScoped=%v", ev.Type, ev.Tenant, spec.TenantScoped)
		dec := json.NewDecoder(bytes.NewReader(ev.Data))
		dec.UseNumber()
		var data any
		require.NoError(t, dec.Decode(&data))
		s.check(t, fmt.Sprintf("%s (%s).data", ev.Type, name), s[name].(map[string]any), data)
		seen[ev.Type]++
	}
	for typ := range cat {
		if _, skip := notDriven[typ]; skip {
			require.Zero(t, seen[typ], "%s was produced: drop it from notDriven", typ)
			continue
		}
		require.NotZero(t, seen[typ], "no event %s was produced: drive it in driveEvents, or list it in notDriven with why", typ)
	}
}

// variants maps every documented event type to its TypedEvent variant
// schema (an EventEnvelope with `type` and `data` pinned).
func (s openAPISchemas) variants(t *testing.T) map[string]map[string]any {
	t.Helper()
	mapping := s[catalogSchema].(map[string]any)["discriminator"].(map[string]any)["mapping"].(map[string]any)
	out := map[string]map[string]any{}
	for typ, ref := range mapping {
		_, v := s.resolve(t, map[string]any{"$ref": ref})
		out[typ] = v
	}
	return out
}

// The envelope always has tenantId (the spec's envelope is {id, type,
// tenantId, subject, data, time}): the tenant's id for a tenant-scoped
// event, null for a fleet-wide one (nodes, pools, devices, …), as
// core.EventCatalog says. docs/openapi.yaml pins the same per variant, and
// the envelopes of the events real commands write, as every channel
// marshals them (core.Event), match their variant whole.
func TestEventEnvelopeTenantID(t *testing.T) {
	t.Parallel()
	s := loadSchemas(t)
	variants := s.variants(t)
	for _, e := range core.EventCatalog() {
		props, required := s.object(t, variants[e.Type])
		require.Contains(t, required, "tenantId", "%s: the envelope always has tenantId", e.Type)
		want := []string{"null"}
		if e.TenantScoped {
			want = []string{"string"}
		}
		require.Equal(t, want, typesOf(props["tenantId"]),
			"%s: its variant's tenantId vs core.EventCatalog TenantScoped=%v", e.Type, e.TenantScoped)
	}

	fleet, tenant := 0, 0
	for _, ev := range driveEvents(t) {
		spec, ok := core.LookupEvent(ev.Type)
		require.True(t, ok, ev.Type)
		b, err := json.Marshal(core.Event{ID: ev.ID, Type: ev.Type, TenantID: ev.Tenant, Subject: ev.Subject,
			Data: ev.Data, Time: ev.Time})
		require.NoError(t, err)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var env map[string]any
		require.NoError(t, dec.Decode(&env))
		require.Contains(t, env, "tenantId", "%s: %s", ev.Type, b)
		if spec.TenantScoped {
			require.Equal(t, ev.Tenant, env["tenantId"], ev.Type)
			require.NotEmpty(t, env["tenantId"], ev.Type)
			tenant++
		} else {
			require.Nil(t, env["tenantId"], "%s is fleet-wide: tenantId null", ev.Type)
			fleet++
		}
		s.check(t, ev.Type+" envelope", variants[ev.Type], env)
	}
	require.NotZero(t, fleet)
	require.NotZero(t, tenant)
}

// check validates v against schema: JSON type (formats date-time and
// uuid, patterns), object keys against properties and required, array
// items, enums, and a oneOf with a discriminator as the variant its
// mapping names for the value's property (TypedEvent by `type`).
func (s openAPISchemas) check(t *testing.T, where string, schema map[string]any, v any) {
	t.Helper()
	_, schema = s.resolve(t, schema)
	if disc, ok := schema["discriminator"].(map[string]any); ok {
		obj, ok := v.(map[string]any)
		require.True(t, ok, "%s = %v: a discriminated oneOf takes an object", where, v)
		prop, _ := disc["propertyName"].(string)
		mapping, _ := disc["mapping"].(map[string]any)
		ref, ok := mapping[fmt.Sprint(obj[prop])].(string)
		require.True(t, ok, "%s: %s %v is not in the discriminator's mapping", where, prop, obj[prop])
		s.check(t, where, map[string]any{"$ref": ref}, v)
		return
	}
	if enum := asSlice(schema["enum"]); enum != nil && v != nil {
		require.Contains(t, enum, v, "%s: not one of the documented values", where)
	}
	types := typesOf(schema)
	if len(types) > 0 {
		require.Contains(t, types, jsonType(v), "%s = %v: wrong JSON type", where, v)
	}
	switch x := v.(type) {
	case map[string]any:
		props, required := s.object(t, schema)
		for _, r := range required {
			require.Contains(t, x, r, "%s: required property %q is missing", where, r)
		}
		for k, val := range x {
			p, ok := props[k]
			require.True(t, ok, "%s: property %q is not documented", where, k)
			s.check(t, where+"."+k, p, val)
		}
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, it := range x {
				s.check(t, fmt.Sprintf("%s[%d]", where, i), items, it)
			}
		}
	case string:
		switch schema["format"] {
		case "date-time":
			_, err := time.Parse(time.RFC3339Nano, x)
			require.NoError(t, err, "%s: not a date-time", where)
		case "uuid":
			require.Regexp(t, uuidPattern, x, "%s: not a uuid", where)
		}
		if pattern, ok := schema["pattern"].(string); ok {
			require.Regexp(t, pattern, x, "%s: does not match the documented pattern", where)
		}
	}
}

// uuidPattern is a uuid as RFC 9562 writes it (format uuid).
var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func typesOf(schema map[string]any) []string {
	switch x := schema["type"].(type) {
	case string:
		if x == "number" {
			return []string{"number", "integer"}
		}
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, e.(string))
			if e == "number" {
				out = append(out, "integer")
			}
		}
		return out
	}
	return nil
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// loggedEvent is one outbox row.
type loggedEvent struct {
	ID      uuid.UUID
	Type    string
	Tenant  string
	Subject string
	Data    []byte
	Time    time.Time
}

// driveEvents runs real commands (capacity, node lifecycle and liveness,
// webhook endpoints) against a fresh database and returns every event they
// appended, in log order.
func driveEvents(t *testing.T) []loggedEvent {
	t.Helper()
	ctx := context.Background()
	pg := pgtest.New(t)
	// n1 never joins and must stay schedulable for the reservations below.
	h := commands.New(pg.Pool, commands.Config{Test: commands.TestConfig{NodesWithoutDaemons: true}})
	ns := commands.New(pg.Pool, commands.Config{})
	wh := webhook.New(pg.Pool, commands.New(pg.Pool, commands.Config{}), webhook.Config{}, nil)
	op := core.Actor{Tenant: "ops", Identity: "alice@ops", Role: core.RoleOperator}
	acme := core.Actor{Tenant: "acme", Identity: "bob@acme", Role: core.RoleMember}
	for _, tn := range []string{"ops", "acme"} {
		require.NoError(t, pg.Q.TenantEnsure(ctx, tn))
	}
	must := func(_ any, err error) {
		t.Helper()
		require.NoError(t, err)
	}

	// Fleet.
	must(h.CreateSite(ctx, op, commands.CreateSite{ID: "fra1", Name: "Frankfurt 1"}))
	must(h.UpdateSite(ctx, op, commands.UpdateSite{ID: "fra1", Name: "Frankfurt One"}))
	must(h.CreatePool(ctx, op, commands.CreatePool{ID: "metal", SiteID: "fra1", Kind: commands.PoolBareMetal, CPURatio: 2}))
	must(h.CreatePool(ctx, op, commands.CreatePool{ID: "cloud", SiteID: "fra1", Kind: commands.PoolProvider,
		LostAfter: 10 * time.Minute}))
	for _, r := range []string{"gpu", "vcpu", "memory", "disk"} {
		must(h.SetQuota(ctx, op, commands.SetQuota{Tenant: "acme", Resource: r, Max: 1 << 30}))
	}
	// A priority class acme may use; its reservations below are of it.
	must(h.CreatePriorityClass(ctx, op, commands.CreatePriorityClass{Name: "batch", Value: -100, Preemptible: true,
		Description: "may be displaced"}))
	must(h.SetTenantPriorityClasses(ctx, op, commands.SetTenantPriorityClasses{Tenant: "acme", Classes: []string{"batch"}}))
	// A fair share for acme: its usage counts a third in the waiting line.
	must(h.SetTenantFairShare(ctx, op, commands.SetTenantFairShare{Tenant: "acme", Share: 3}))
	// A suspension of acme, lifted at once: what follows is acme's again.
	must(h.SuspendTenant(ctx, op, commands.SuspendTenant{Tenant: "acme", Reason: "invoice 2026-11 unpaid"}))
	must(h.ResumeTenant(ctx, op, commands.ResumeTenant{Tenant: "acme"}))
	exclusive := core.GPULayout{Mode: core.GPUExclusive}
	register := func(id, pool string, gpus int) {
		t.Helper()
		var inv []commands.GPUInventory
		for i := range gpus {
			inv = append(inv, commands.GPUInventory{UUID: fmt.Sprintf("GPU-%s-%d", id, i), Model: "a100",
				MemoryMB: 81920, Layout: exclusive})
		}
		must(h.RegisterNode(ctx, op, commands.RegisterNode{ID: id, PoolID: pool, VCPU: 64, MemoryMB: 512 * 1024,
			DiskGB: 2000, Taints: []string{"dedicated=acme"}, GPUs: inv}))
	}
	register("n1", "metal", 2)
	must(h.CordonNode(ctx, op, commands.CordonNode{NodeID: "n1"}))
	must(h.UncordonNode(ctx, op, commands.CordonNode{NodeID: "n1"}))
	must(h.TaintNode(ctx, op, commands.TaintNode{NodeID: "n1", Taint: "maintenance"}))
	must(h.UntaintNode(ctx, op, commands.TaintNode{NodeID: "n1", Taint: "maintenance"}))
	must(h.SetGPUMode(ctx, op, commands.SetGPUMode{GPUID: "GPU-n1-1",
		Layout: core.GPULayout{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "3g.40gb"}}}))
	must(h.QuarantineDevice(ctx, op, commands.QuarantineDevice{DeviceID: "GPU-n1-1"}))
	must(h.UnquarantineDevice(ctx, op, commands.QuarantineDevice{DeviceID: "GPU-n1-1"}))
	must(h.SetDeviceHealth(ctx, op, commands.SetDeviceHealth{DeviceID: "GPU-n1-1", Healthy: false}))
	must(h.SetDeviceHealth(ctx, op, commands.SetDeviceHealth{DeviceID: "GPU-n1-1", Healthy: true}))

	// Node liveness, on a provider node so that it can be lost. The first
	// sweep sets the controller heartbeat; advance sweeps as a live
	// control plane does.
	must(nil, commandstest.SweepLiveness(ctx, ns))
	advance := func(d time.Duration) {
		t.Helper()
		for ; d > 0; d -= commands.LivenessSweepEvery {
			pg.AdvanceSimClock(t, min(d, commands.LivenessSweepEvery))
			must(nil, commandstest.SweepLiveness(ctx, ns))
		}
	}
	register("c1", "cloud", 1)
	first, err := ns.JoinNode(ctx, op, "c1")
	require.NoError(t, err)
	// A re-join supersedes the first credential, then it is revoked:
	// node.credential_revoked, reasons superseded and revoked.
	must(ns.JoinNode(ctx, op, "c1"))
	require.NoError(t, ns.RevokeNodeCredential(ctx, op, "c1", first.ID))
	gw, err := lease.Acquire(ctx, pg.Q, gateway.GatewayLeaseName("gw1"), "gw1-process", lease.GatewayTTL)
	require.NoError(t, err)
	sess, err := ns.NodeSessions().OpenNodeSession(ctx, commands.OpenNodeSession{NodeID: "c1", Gateway: gw, GatewayID: "gw1", JournalID: "j1"})
	require.NoError(t, err)
	// Its daemon reports another GPU than the recorded one: the recorded
	// one goes missing (device.health_changed), the new one is registered
	// (gpu.registered), node.inventory_reconciled; then the recorded one
	// comes back, with a memory that does not match.
	must(ns.NodeSessions().ReconcileNodeInventory(ctx, "c1", sess.Epoch, commands.NodeInventory{GPUs: []commands.ReportedGPU{
		{UUID: "GPU-c1-new", Model: "a100", MemoryMB: 81920}}}))
	must(ns.NodeSessions().ReconcileNodeInventory(ctx, "c1", sess.Epoch, commands.NodeInventory{GPUs: []commands.ReportedGPU{
		{UUID: "GPU-c1-0", Model: "a100", MemoryMB: 40960}, {UUID: "GPU-c1-new", Model: "a100", MemoryMB: 81920}}}))
	require.NoError(t, ns.NodeSessions().CloseNodeSession(ctx, "c1", sess.Epoch, 0))
	advance(commands.NoSessionAfter + 10*time.Minute + commands.LivenessSweepEvery)
	must(h.RetireNode(ctx, op, commands.RetireNode{NodeID: "c1"}))

	// Reservations: booked, extended, activated, released.
	now := pg.Now(t)
	reserve := func(start, end time.Time) commands.ReservationResult {
		t.Helper()
		res, err := h.CreateReservation(ctx, acme, commands.CreateReservation{PoolID: "metal", GPUs: 1, VCPU: 4,
			MemoryMB: 8192, DiskGB: 50, Start: start, End: end, Tolerations: []string{"dedicated=acme"},
			PriorityClass: "batch"})
		require.NoError(t, err)
		return res
	}
	r1 := reserve(now.Add(time.Hour), now.Add(3*time.Hour))
	require.Equal(t, core.ReservationBooked, r1.Reservation.State)
	must(h.ExtendReservation(ctx, acme, commands.ExtendReservation{ReservationID: r1.Reservation.ID,
		NewEnd: now.Add(4 * time.Hour)}))
	pg.AdvanceSimClock(t, time.Hour)
	require.NoError(t, commandstest.Activate(ctx, h, r1.Reservation.ID))
	// A node job and an instance on the active reservation: queued,
	// requested, then stopping. What moves them on is a daemon's report
	// (notDriven).
	must(h.RunNodeCommand(ctx, acme, commands.RunNodeCommand{NodeID: r1.Reservation.NodeID, IdempotencyKey: "schema-exec",
		Kind: core.NodeCommandExec, Payload: core.NodeCommandPayload{Script: "true"}}))
	inst, err := h.CreateInstance(ctx, acme, commands.CreateInstance{ReservationID: r1.Reservation.ID,
		Spec: core.InstanceSpec{Command: "true"}})
	require.NoError(t, err)
	must(h.DeleteInstance(ctx, acme, inst.Instance.ID))
	must(h.ReleaseReservation(ctx, acme, commands.ReleaseReservation{ReservationID: r1.Reservation.ID}))

	// Expired.
	now = pg.Now(t)
	r2 := reserve(now, now.Add(time.Hour))
	require.NoError(t, commandstest.Activate(ctx, h, r2.Reservation.ID))
	pg.AdvanceSimClock(t, 2*time.Hour)
	require.NoError(t, commandstest.Expire(ctx, h, r2.Reservation.ID))

	// Pending while the node drains: one is cancelled, one booked later.
	must(h.DrainNode(ctx, op, commands.DrainNode{NodeID: "n1"}))
	now = pg.Now(t)
	r3 := reserve(now.Add(time.Hour), now.Add(2*time.Hour))
	require.Equal(t, core.ReservationPending, r3.Reservation.State)
	r4 := reserve(now.Add(time.Hour), now.Add(2*time.Hour))
	must(h.CancelReservation(ctx, acme, commands.CancelReservation{ReservationID: r3.Reservation.ID}))
	must(h.UndrainNode(ctx, op, commands.DrainNode{NodeID: "n1"}))
	require.NoError(t, h.RetryPending(ctx, r4.Reservation.ID))
	booked, err := h.GetReservation(ctx, acme, r4.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, booked.State)
	// Preempted: a reservation of the default class (value 0) displaces
	// the batch one (-100) from the node's one whole GPU.
	pre, err := h.CreateReservation(ctx, acme, commands.CreateReservation{PoolID: "metal", GPUs: 1, VCPU: 4,
		MemoryMB: 8192, DiskGB: 50, Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Tolerations: []string{"dedicated=acme"}})
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, pre.Reservation.State)
	preempted, err := h.GetReservation(ctx, acme, r4.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationPreempted, preempted.State)
	// Shortened: a batch reservation after it, from 2 h to 4 h, is cut
	// back to 3 h by one of the default class that starts there.
	r5 := reserve(now.Add(2*time.Hour), now.Add(4*time.Hour))
	require.Equal(t, core.ReservationBooked, r5.Reservation.State)
	must(h.CreateReservation(ctx, acme, commands.CreateReservation{PoolID: "metal", GPUs: 1, VCPU: 4,
		MemoryMB: 8192, DiskGB: 50, Start: now.Add(3 * time.Hour), End: now.Add(4 * time.Hour), Tolerations: []string{"dedicated=acme"}}))
	shortened, err := h.GetReservation(ctx, acme, r5.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, shortened.State)
	require.True(t, shortened.End.Equal(now.Add(3*time.Hour)))

	// Webhook endpoints.
	ep, err := wh.CreateEndpoint(ctx, acme, webhook.CreateEndpoint{URL: "https://hooks.example.com/acme",
		EventTypes: []string{core.EventReservationBooked}})
	require.NoError(t, err)
	off, on, url := false, true, "https://hooks.example.com/acme2"
	must(wh.PatchEndpoint(ctx, acme, ep.ID, webhook.PatchEndpoint{URL: &url}))
	must(wh.PatchEndpoint(ctx, acme, ep.ID, webhook.PatchEndpoint{Enabled: &off}))
	must(wh.PatchEndpoint(ctx, acme, ep.ID, webhook.PatchEndpoint{Enabled: &on, EventTypes: &[]string{}}))
	must(wh.RotateSecret(ctx, acme, ep.ID))
	must(wh.RecoverEndpoint(ctx, acme, ep.ID, pgtest.SimEpoch))
	must(wh.DeleteEndpoint(ctx, acme, ep.ID))

	rows, err := pg.Pool.Query(ctx, "SELECT id, type, coalesce(tenant_id, ''), subject, data, time FROM outbox ORDER BY txid, seq")
	require.NoError(t, err)
	defer rows.Close()
	var out []loggedEvent
	for rows.Next() {
		var e loggedEvent
		require.NoError(t, rows.Scan(&e.ID, &e.Type, &e.Tenant, &e.Subject, &e.Data, &e.Time))
		out = append(out, e)
	}
	require.NoError(t, rows.Err())
	return out
}
