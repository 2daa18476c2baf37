package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

func TestCapacityRejectsBadInput(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	var rsv reservationJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, f.reservationBody(t, 1), nil).decode(t, &rsv)
	start, end := f.window(t, 0, time.Hour)
	valid := `"poolId":"fra1-gpu","gpus":1,"start":"` + start + `","end":"` + end + `"`

	for name, tc := range map[string]struct {
		method, path, body string
		hdr                map[string]string
		mention            string
	}{
		"malformed JSON":           {http.MethodPost, "/v1/reservations", `{"poolId":`, nil, "JSON"},
		"unknown field":            {http.MethodPost, "/v1/reservations", `{` + valid + `,"priority":1}`, nil, `"priority"`},
		"bad start time":           {http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","gpus":1,"start":"tomorrow","end":"` + end + `"}`, nil, `"start"`},
		"offset minutes past 59":   {http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","gpus":1,"start":"` + strings.Replace(start, "Z", "+05:60", 1) + `","end":"` + end + `"}`, nil, `"start"`},
		"offset of 24 hours":       {http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","gpus":1,"start":"` + strings.Replace(start, "Z", "+24:00", 1) + `","end":"` + end + `"}`, nil, `"start"`},
		"fraction after a comma":   {http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","gpus":1,"start":"` + start + `","end":"` + strings.Replace(end, "Z", ",5Z", 1) + `"}`, nil, `"end"`},
		"extend offset -24:00":     {http.MethodPost, "/v1/reservations/" + rsv.ID + "/extend", `{"end":"` + strings.Replace(end, "Z", "-24:00", 1) + `"}`, nil, `"end"`},
		"time without zone":        {http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","gpus":1,"start":"2026-01-02T03:04:05","end":"` + end + `"}`, nil, `"start"`},
		"missing end":              {http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","gpus":1,"start":"` + start + `"}`, nil, `"end"`},
		"wrong type":               {http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","gpus":"one","start":"` + start + `","end":"` + end + `"}`, nil, `"gpus"`},
		"fractional count":         {http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","gpus":1.5,"start":"` + start + `","end":"` + end + `"}`, nil, `"gpus"`},
		"end before start":         {http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","gpus":1,"start":"` + end + `","end":"` + start + `"}`, nil, "end"},
		"pool and site":            {http.MethodPost, "/v1/reservations", `{` + valid + `,"siteId":"fra1"}`, nil, "siteId"},
		"NUL in a string":          {http.MethodPost, "/v1/reservations", `{` + valid + `,"gpuModel":"a\u0000"}`, nil, `"gpuModel"`},
		"gpuModel too long":        {http.MethodPost, "/v1/reservations", `{` + valid + `,"gpuModel":"` + strings.Repeat("m", 129) + `"}`, nil, "gpuModel: GPU model"},
		"bad toleration":           {http.MethodPost, "/v1/reservations", `{` + valid + `,"tolerations":[{"key":"a=b"}]}`, nil, "key"},
		"long idempotency key":     {http.MethodPost, "/v1/reservations", `{` + valid + `}`, map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}, "Idempotency-Key"},
		"If-Match on create":       {http.MethodPost, "/v1/reservations", `{` + valid + `}`, map[string]string{"If-Match": "1"}, "If-Match"},
		"extend bad time":          {http.MethodPost, "/v1/reservations/" + rsv.ID + "/extend", `{"end":"2026-13-01T00:00:00Z"}`, nil, `"end"`},
		"extend unknown field":     {http.MethodPost, "/v1/reservations/" + rsv.ID + "/extend", `{"end":"` + end + `","newEnd":"` + end + `"}`, nil, `"newEnd"`},
		"malformed If-Match":       {http.MethodPost, "/v1/reservations/" + rsv.ID + "/release", ``, map[string]string{"If-Match": "v1"}, "If-Match"},
		"zero If-Match":            {http.MethodPost, "/v1/reservations/" + rsv.ID + "/release", ``, map[string]string{"If-Match": "0"}, "If-Match"},
		"two versions in If-Match": {http.MethodPost, "/v1/reservations/" + rsv.ID + "/release", ``, map[string]string{"If-Match": `"1", "2"`}, "If-Match"},
		"body on release":          {http.MethodPost, "/v1/reservations/" + rsv.ID + "/release", `{"reason":"done"}`, nil, `"reason"`},
		"body on cordon":           {http.MethodPost, "/v1/nodes/n1/cordon", `{"drain":true}`, nil, `"drain"`},
		"taint without key":        {http.MethodPost, "/v1/nodes/n1/taint", `{"value":"x"}`, nil, "key"},
		"taint other effect":       {http.MethodPost, "/v1/nodes/n1/taint", `{"key":"k","effect":"NoExecute"}`, nil, "NoSchedule"},
		"health not an enum":       {http.MethodPut, "/v1/devices/GPU-n1-0/health", `{"health":"sick"}`, nil, `"health"`},
		"mode missing":             {http.MethodPut, "/v1/gpus/GPU-n1-0/mode", `{"slots":4}`, nil, `"mode"`},
		"mode unknown":             {http.MethodPut, "/v1/gpus/GPU-n1-0/mode", `{"mode":"vgpu"}`, nil, "vgpu"},
		"MIG profile malformed":    {http.MethodPut, "/v1/gpus/GPU-n1-0/mode", `{"mode":"mig","mig":["big"]}`, nil, "big"},
		"quota without max":        {http.MethodPut, "/v1/tenants/acme/quotas/gpu", `{}`, nil, `"max"`},
		"quota resource unknown":   {http.MethodPut, "/v1/tenants/acme/quotas/bananas", `{"max":1}`, nil, "bananas"},
		"quota If-Match malformed": {http.MethodPut, "/v1/tenants/acme/quotas/gpu", `{"max":1}`, map[string]string{"If-Match": "v1"}, "If-Match"},
		"site without name":        {http.MethodPost, "/v1/sites", `{"id":"ams1"}`, nil, `"name"`},
		"pool lostAfter overflow":  {http.MethodPost, "/v1/pools", `{"id":"p2","siteId":"fra1","kind":"provider","lostAfterSeconds":99999999999999}`, nil, "lostAfterSeconds"},
		"pool lostAfter zero":      {http.MethodPost, "/v1/pools", `{"id":"p2","siteId":"fra1","kind":"provider","lostAfterSeconds":0}`, nil, "lostAfterSeconds"},
		"pool cpuRatio zero":       {http.MethodPost, "/v1/pools", `{"id":"p2","siteId":"fra1","kind":"bare-metal","cpuRatio":0}`, nil, `"cpuRatio"`},
		"pool diskRatio below one": {http.MethodPost, "/v1/pools", `{"id":"p2","siteId":"fra1","kind":"bare-metal","diskRatio":0.5}`, nil, `"diskRatio"`},
		"pool cpuRatio over 64":    {http.MethodPost, "/v1/pools", `{"id":"p2","siteId":"fra1","kind":"bare-metal","cpuRatio":65}`, nil, `"cpuRatio" must be 1 to 64`},
		"node GPU without uuid":    {http.MethodPost, "/v1/nodes", `{"id":"n2","poolId":"fra1-gpu","gpus":[{"model":"a100","memoryMb":1}]}`, nil, "uuid"},
		"amount over 2^53":         {http.MethodPost, "/v1/nodes", `{"id":"n2","poolId":"fra1-gpu","vcpu":9007199254740992}`, nil, `"vcpu"`},
		"NUL in a path":            {http.MethodPost, "/v1/nodes/n%001/cordon", ``, nil, "id"},
	} {
		t.Run(name, func(t *testing.T) {
			token := f.operator
			if strings.HasPrefix(tc.path, "/v1/reservations") {
				token = f.member
			}
			var body any
			if tc.body != "" {
				body = tc.body
			}
			e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, tc.method, tc.path, token, body, tc.hdr)
			require.Contains(t, e.Message, tc.mention)
			// The code is the envelope's; a message that repeats it
			// quoted another error's Error() (gpuModel did).
			require.NotContains(t, e.Message, string(core.CodeInvalidArgument))
		})
	}

	// None of it changed anything.
	require.Equal(t, 1, f.countReservations(t, "acme"))
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/reservations/"+rsv.ID+"/release", f.member, nil, map[string]string{"If-Match": `"1"`})
}

// TestCapacityBadInputIsNeverInternal throws hostile but well-formed input
// at every route: whatever the answer, it is the caller's error, never 500.
func TestCapacityBadInputIsNeverInternal(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	start, end := f.window(t, 0, time.Hour)
	huge := "9223372036854775807"
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","gpus":` + huge + `,"start":"` + start + `","end":"` + end + `"}`},
		{http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","vcpu":` + huge + `,"memoryMb":` + huge + `,"start":"` + start + `","end":"` + end + `"}`},
		{http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","gpus":1,"start":"0001-01-01T00:00:00Z","end":"9999-12-31T23:59:59Z"}`},
		{http.MethodPost, "/v1/reservations", `{"poolId":"nope","gpus":1,"start":"` + start + `","end":"` + end + `"}`},
		{http.MethodPost, "/v1/reservations", `{"siteId":"NOPE","gpus":1,"start":"` + start + `","end":"` + end + `"}`},
		{http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","gpus":1,"slotKind":"mig","start":"` + start + `","end":"` + end + `"}`},
		{http.MethodPost, "/v1/reservations/rsv_x/extend", `{"end":"9999-12-31T23:59:59Z"}`},
		{http.MethodPost, "/v1/reservations/%E2%82/cancel", ``},
		{http.MethodPost, "/v1/sites", `{"id":"Not Valid","name":"x"}`},
		{http.MethodPost, "/v1/sites", `{"id":"fra1","name":"again"}`},
		{http.MethodPost, "/v1/pools", `{"id":"p2","siteId":"nope","kind":"bare-metal"}`},
		{http.MethodPost, "/v1/pools", `{"id":"p2","siteId":"fra1","kind":"bare-metal","cpuRatio":1e308}`},
		{http.MethodPost, "/v1/pools", `{"id":"p2","siteId":"fra1","kind":"bare-metal","cpuRatio":-1}`},
		{http.MethodPost, "/v1/pools", `{"id":"p2","siteId":"fra1","kind":"bare-metal","lostAfterSeconds":60}`},
		{http.MethodPost, "/v1/nodes", `{"id":"n1","poolId":"fra1-gpu"}`},
		{http.MethodPost, "/v1/nodes", `{"id":"n2","poolId":"nope"}`},
		{http.MethodPost, "/v1/nodes", `{"id":"n2","poolId":"fra1-gpu","vcpu":` + huge + `,"memoryMb":` + huge + `,"diskGb":` + huge + `}`},
		{http.MethodPost, "/v1/nodes", `{"id":"n3","poolId":"fra1-gpu","gpus":[{"uuid":"GPU-n1-0","model":"a100","memoryMb":1}]}`},
		{http.MethodPost, "/v1/nodes", `{"id":"n4","poolId":"fra1-gpu","gpus":[{"uuid":"g","model":"a100","memoryMb":` + huge + `,"layout":{"mode":"time-slice","slots":48}}]}`},
		{http.MethodPost, "/v1/nodes/nope/cordon", ``},
		{http.MethodPost, "/v1/nodes/n1/taint", `{"key":"` + strings.Repeat("k", 300) + `"}`},
		{http.MethodPost, "/v1/devices/GPU-n1-0%2Fs0/quarantine", ``},
		{http.MethodPut, "/v1/gpus/nope/mode", `{"mode":"exclusive"}`},
		{http.MethodPut, "/v1/gpus/GPU-n1-0/mode", `{"mode":"time-slice","slots":1000}`},
		{http.MethodPut, "/v1/gpus/GPU-n1-0/mode", `{"mode":"mig","mig":["7g.1000gb"]}`},
		{http.MethodPut, "/v1/tenants/nobody/quotas/gpu", `{"max":1}`},
		{http.MethodPut, "/v1/tenants/Not%20A%20Tenant/quotas/gpu", `{"max":1}`},
		{http.MethodPut, "/v1/tenants/acme/quotas/gpu", `{"max":-1}`},
		{http.MethodPut, "/v1/tenants/acme/quotas/gpu", `{"max":` + huge + `}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		token := f.operator
		if strings.HasPrefix(c.path, "/v1/reservations") {
			token = f.member
		}
		r := f.send(t, c.method, c.path, token, body, nil)
		if r.status >= 500 {
			logs := f.logs.String()
			t.Errorf("%s %s %s: %s\nlog tail: %s", c.method, c.path, c.body, r.body, logs[max(0, len(logs)-600):])
			continue
		}
		require.GreaterOrEqual(t, r.status, 200)
		if r.status >= 400 {
			r.errorBody(t)
		}
	}
}

// A MIG layout on a GPU whose model has no MIG (an L4) is the caller's
// error: 400 INVALID_ARGUMENT naming the GPU and its model, at
// registration and at a mode change, and the GPU keeps its mode.
func TestCapacityRefusesMIGOnAGPUWithoutMIG(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPost, "/v1/nodes", f.operator,
		`{"id":"l4a","poolId":"fra1-gpu","gpus":[{"uuid":"GPU-l4a-0","model":"L4-24GB","memoryMb":23034,
		  "layout":{"mode":"mig","mig":["1g.5gb"]}}]}`, nil)
	require.Contains(t, e.Message, "GPU GPU-l4a-0 (model L4-24GB) cannot be partitioned with MIG")

	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/nodes", f.operator,
		`{"id":"l4b","poolId":"fra1-gpu","gpus":[{"uuid":"GPU-l4b-0","model":"L4-24GB","memoryMb":23034}]}`, nil)
	e = f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPut, "/v1/gpus/GPU-l4b-0/mode", f.operator,
		`{"mode":"mig","mig":["1g.5gb","1g.5gb"]}`, nil)
	require.Contains(t, e.Message, "GPU GPU-l4b-0 (model L4-24GB) cannot be partitioned with MIG")
	var dev map[string]any
	f.ok(t, http.StatusOK, http.MethodPut, "/v1/gpus/GPU-l4b-0/mode", f.operator, `{"mode":"time-slice","slots":2}`, nil).decode(t, &dev)
	require.Equal(t, float64(2), dev["version"], "the refused change wrote nothing")
}
