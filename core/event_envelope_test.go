package core_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// The envelope always has tenantId: the tenant's id for a tenant event,
// null for a fleet-wide one; decoding gives the same event back.
func TestEventEnvelopeTenantIDIsNullForFleetEvents(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	id := uuid.MustParse("0b6f8c1e-4c1e-4f0a-9a53-2d7f0c3e9b11")
	for _, tc := range []struct {
		tenant, want string
	}{
		{"", `{"id":"0b6f8c1e-4c1e-4f0a-9a53-2d7f0c3e9b11","type":"node.cordoned","tenantId":null,"subject":"nodes/n1","data":{"version":2},"time":"2030-01-01T00:00:00Z"}`},
		{"acme", `{"id":"0b6f8c1e-4c1e-4f0a-9a53-2d7f0c3e9b11","type":"node.cordoned","tenantId":"acme","subject":"nodes/n1","data":{"version":2},"time":"2030-01-01T00:00:00Z"}`},
	} {
		e := core.Event{ID: id, Type: core.EventNodeCordoned, TenantID: tc.tenant, Subject: "nodes/n1",
			Data: json.RawMessage(`{"version":2}`), Time: at}
		b, err := json.Marshal(e)
		require.NoError(t, err)
		require.Equal(t, tc.want, string(b))
		var back core.Event
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, e, back)
	}
}
