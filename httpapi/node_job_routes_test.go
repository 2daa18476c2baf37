package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
)

// commandJSON is a command as the API returns it.
type commandJSON struct {
	ID       string `json:"id"`
	Tenant   string `json:"tenant"`
	NodeID   string `json:"nodeId"`
	Kind     string `json:"kind"`
	State    string `json:"state"`
	Version  int64  `json:"version"`
	Position string `json:"position"`
}

// setupCommands is a server with the capacity, command and instance
// routes, nodes n1 and n2 in pool fra1-gpu, and a booked reservation of
// tenant acme on one of them, and extra routes. It returns that node and
// the reservation.
func setupCommands(t *testing.T, extra ...httpapi.Routes) (*fleet, string, string) {
	t.Helper()
	h := new(commands.Handlers)
	s := setup(t, append([]httpapi.Routes{httpapi.CapacityRoutes(h), httpapi.NodeJobRoutes(h), httpapi.InstanceRoutes(h)},
		extra...)...)
	*h = *commands.New(s.pg.Pool, commands.Config{})
	ctx := context.Background()
	op := core.Actor{Tenant: "ops", Identity: "op@ops", Role: core.RoleOperator}
	_, err := h.CreateSite(ctx, op, commands.CreateSite{ID: "fra1", Name: "Frankfurt 1"})
	require.NoError(t, err)
	_, err = h.CreatePool(ctx, op, commands.CreatePool{ID: "fra1-gpu", SiteID: "fra1", Kind: commands.PoolBareMetal})
	require.NoError(t, err)
	for _, id := range []string{"n1", "n2"} {
		_, err = h.RegisterNode(ctx, op, commands.RegisterNode{ID: id, PoolID: "fra1-gpu", VCPU: 64, MemoryMB: 524288,
			DiskGB: 2000, GPUs: []commands.GPUInventory{{UUID: "GPU-" + id, Model: "a100", MemoryMB: 81920,
				Layout: core.GPULayout{Mode: core.GPUExclusive}}}})
		require.NoError(t, err)
	}
	f := &fleet{testServer: s}
	_, f.member = s.tokenFor(t, "acme", "alice@acme", core.RoleMember)
	for _, r := range []string{"gpu", "vcpu", "memory", "disk"} {
		_, err := h.SetQuota(ctx, op, commands.SetQuota{Tenant: "acme", Resource: r, Max: 1 << 20})
		require.NoError(t, err)
	}
	var rsv reservationJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, f.reservationBody(t, 1), nil).decode(t, &rsv)
	// Node jobs run only once the reservation's window has begun.
	require.NoError(t, commandstest.Activate(ctx, h, rsv.ID))
	return f, rsv.NodeID, rsv.ID
}

func TestRunCommandOverHTTP(t *testing.T) {
	t.Parallel()
	f, node, _ := setupCommands(t)
	other := map[string]string{"n1": "n2", "n2": "n1"}[node]
	_, globex := f.tokenFor(t, "globex", "hank@globex", core.RoleMember)
	_, viewer := f.tokenFor(t, "acme", "vic@acme", core.RoleViewer)
	body := map[string]any{"nodeId": node, "kind": "exec", "payload": map[string]any{"script": "nvidia-smi -L"}}
	key := map[string]string{"Idempotency-Key": "wf:wf_7:step-1"}

	var first, again, got commandJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/commands", f.member, body, key).decode(t, &first)
	require.Regexp(t, `^cmd_`, first.ID)
	require.Equal(t, "queued", first.State)
	require.Regexp(t, positionPattern, first.Position)
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/commands", f.member, body, key).decode(t, &again)
	require.Equal(t, first.ID, again.ID, "same Idempotency-Key, one command")
	f.ok(t, http.StatusOK, http.MethodGet, "/v1/commands/"+first.ID, f.member, nil, nil).decode(t, &got)
	require.Equal(t, first.ID, got.ID)

	// Chosen: a node the tenant holds no reservation on is 404, exactly as
	// a node that does not exist; another tenant's command is 404 too.
	elsewhere := map[string]any{"nodeId": other, "kind": "exec", "payload": map[string]any{"script": "true"}}
	missing := map[string]any{"nodeId": "nope", "kind": "exec", "payload": map[string]any{"script": "true"}}
	f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodPost, "/v1/commands", f.member, elsewhere,
		map[string]string{"Idempotency-Key": "k2"})
	f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodPost, "/v1/commands", f.member, missing,
		map[string]string{"Idempotency-Key": "k3"})
	f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodPost, "/v1/commands", globex, body, key)
	f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodGet, "/v1/commands/"+first.ID, globex, nil, nil)
	f.fails(t, http.StatusForbidden, core.CodePermissionDenied, http.MethodPost, "/v1/commands", f.member,
		map[string]any{"nodeId": node, "kind": "wipe"}, map[string]string{"Idempotency-Key": "k4"})
	f.fails(t, http.StatusForbidden, core.CodePermissionDenied, http.MethodPost, "/v1/commands", viewer, body, key)
	f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPost, "/v1/commands", f.member, body, nil)

	// The operator may wipe any node.
	var wipe commandJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/commands", f.operator, map[string]any{"nodeId": other, "kind": "wipe"},
		map[string]string{"Idempotency-Key": "wipe-1"}).decode(t, &wipe)
	require.Equal(t, "wipe", wipe.Kind)
}

// A job that could never run is 400 (minGeneration above the node's
// generation); past the open-jobs cap (COMPUTE_MAX_OPEN_NODE_JOBS, 64) one
// more is 409. Neither writes anything.
func TestNodeJobLimitsOverHTTP(t *testing.T) {
	t.Parallel()
	f, node, _ := setupCommands(t)
	exec := func(key string, extra map[string]any) (map[string]any, map[string]string) {
		body := map[string]any{"nodeId": node, "kind": "exec", "payload": map[string]any{"script": "true"}}
		for k, v := range extra {
			body[k] = v
		}
		return body, map[string]string{"Idempotency-Key": key}
	}
	jobs := func() (n int) {
		t.Helper()
		require.NoError(t, f.pg.Pool.QueryRow(context.Background(),
			"SELECT count(*) FROM node_commands WHERE kind = 'exec'").Scan(&n))
		return n
	}

	body, key := exec("gen", map[string]any{"minGeneration": 99})
	e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPost, "/v1/commands", f.member, body, key)
	require.Contains(t, e.Message, "minGeneration 99 is above node "+node+"'s generation 1")
	require.Zero(t, jobs())

	for k := range commands.DefaultMaxOpenNodeJobs {
		body, key := exec(fmt.Sprintf("k%d", k), nil)
		f.ok(t, http.StatusCreated, http.MethodPost, "/v1/commands", f.member, body, key)
	}
	before := f.countOutbox(t)
	body, key = exec("one-more", nil)
	e = f.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPost, "/v1/commands", f.member, body, key)
	require.Contains(t, e.Message, fmt.Sprintf("you have %d node jobs open on node %s", commands.DefaultMaxOpenNodeJobs, node))
	require.Equal(t, commands.DefaultMaxOpenNodeJobs, jobs(), "nothing written")
	require.Equal(t, before, f.countOutbox(t))
}
