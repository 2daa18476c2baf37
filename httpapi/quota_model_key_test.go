package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// nvidia-smi names GPUs with spaces ("NVIDIA H100 80GB HBM3"), and a node
// registers the name as reported. A model quota for such a GPU is set (its
// key percent-encoded in the path), listed, and charged by a reservation
// placed on it: the second H100 is QUOTA_EXCEEDED. Before, the quota key's
// rule (letters, digits, '.', '_', '-') refused every such name with 400,
// so those GPUs could have no model quota at all. A key that is no model
// (empty, a control character, over 128 bytes) is still 400, saying so.
func TestModelQuotaForANameWithSpaces(t *testing.T) {
	f := setupQuotaFleet(t)
	const model = "NVIDIA H100 80GB HBM3"
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/nodes", f.operator, `{"id":"n2","poolId":"fra1-gpu",
		"vcpu":64,"memoryMb":524288,"diskGb":2000,
		"gpus":[{"uuid":"GPU-n2-0","model":"`+model+`","memoryMb":81920},
		        {"uuid":"GPU-n2-1","model":"`+model+`","memoryMb":81920}]}`, nil)

	path := "/v1/tenants/acme/quotas/" + url.PathEscape(core.GPUModelQuota(model))
	var set quotaJSON
	f.ok(t, http.StatusOK, http.MethodPut, path, f.operator, `{"max":1}`, nil).decode(t, &set)
	require.Equal(t, "gpu:"+model, set.Resource)

	body := f.reservationBody(t, 1)
	body["gpuModel"] = model
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, body, nil)
	e := f.fails(t, http.StatusConflict, core.CodeQuotaExceeded, http.MethodPost, "/v1/reservations", f.member, body, nil)
	require.Contains(t, e.Message, model)
	q, ok := f.quotaOf(t, "gpu:"+model)
	require.True(t, ok)
	require.Equal(t, int64(1), q.Used)
	require.Equal(t, int64(1), q.Max)

	for name, key := range map[string]string{
		"no model":          "gpu:",
		"control character": "gpu:H100\t80GB",
		"over 128 bytes":    "gpu:" + strings.Repeat("H", 129),
		"not a resource":    "gpus",
	} {
		t.Run(name, func(t *testing.T) {
			e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPut,
				"/v1/tenants/acme/quotas/"+url.PathEscape(key), f.operator, `{"max":1}`, nil)
			require.Contains(t, e.Message, "quota resource")
		})
	}
}
