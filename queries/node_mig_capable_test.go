package queries_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
)

// GET /v1/nodes/{id} says per GPU whether it takes a MIG layout: by its
// model until its daemon reports otherwise (devices.mig_capable, written
// without an event, read at read time); atoms say nothing.
func TestNodeShowsWhichGPUsTakeMIG(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 2) // two a100s: MIG by their model

	n := f.readNode(t, "n1")
	require.Len(t, n.Devices, 2)
	for _, d := range n.Devices {
		require.NotNil(t, d.MIGCapable, d.ID)
		require.True(t, *d.MIGCapable, d.ID)
	}

	// The daemon finds the first without MIG (nvidia-smi: N/A).
	no := false
	_, err := f.d.Q.DeviceSetMIGCapable(f.ctx, db.DeviceSetMIGCapableParams{ID: n.Devices[0].ID, MigCapable: &no})
	require.NoError(t, err)
	n = f.readNode(t, "n1")
	require.False(t, *n.Devices[0].MIGCapable, "what the daemon reports decides over the model")
	require.True(t, *n.Devices[1].MIGCapable)
}
