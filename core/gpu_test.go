package core

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseMIGProfile(t *testing.T) {
	t.Parallel()
	p, err := ParseMIGProfile("3g.40gb")
	require.NoError(t, err)
	require.Equal(t, MIGProfile{Name: "3g.40gb", Slices: 3, MemoryGB: 40}, p)
	for _, bad := range []string{"", "1g", "5g.10gb", "8g.10gb", "1g.0gb", "1G.10GB", "1g.10gb ",
		"1g.10000gb", "1g.18014398509481985gb", "1g.99999999999999999999999999gb"} {
		_, err := ParseMIGProfile(bad)
		require.Error(t, err, bad)
		require.Equal(t, CodeInvalidArgument, CodeOf(err), bad)
	}
}

func TestLayoutAtoms(t *testing.T) {
	t.Parallel()
	const gpu, mem = "GPU-1", 81920
	atoms, err := GPULayout{Mode: GPUExclusive}.Atoms(gpu, mem)
	require.NoError(t, err)
	require.Empty(t, atoms, "an exclusive GPU is its own atom")

	atoms, err = GPULayout{Mode: GPUMIG, MIG: []string{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}}.Atoms(gpu, mem)
	require.NoError(t, err)
	require.Len(t, atoms, 4)
	require.Equal(t, Atom{ID: "GPU-1/mig-0", Kind: AtomMIG, Profile: "3g.40gb", MemoryMB: 40960}, atoms[0])
	require.Equal(t, "GPU-1/mig-3", atoms[3].ID)

	atoms, err = GPULayout{Mode: GPUTimeSlice, Slots: 4}.Atoms(gpu, mem)
	require.NoError(t, err)
	require.Len(t, atoms, 4)
	require.Equal(t, Atom{ID: "GPU-1/s3", Kind: AtomSlot, Profile: "time-slice", MemoryMB: mem / 4}, atoms[3])

	for name, l := range map[string]GPULayout{
		"too many slices":  {Mode: GPUMIG, MIG: []string{"4g.40gb", "4g.40gb"}},
		"too much memory":  {Mode: GPUMIG, MIG: []string{"1g.80gb", "1g.10gb"}},
		"9999 GB":          {Mode: GPUMIG, MIG: []string{"1g.9999gb"}},
		"too many":         {Mode: GPUMIG, MIG: []string{"1g.1gb", "1g.1gb", "1g.1gb", "1g.1gb", "1g.1gb", "1g.1gb", "1g.1gb", "1g.1gb"}},
		"mig without list": {Mode: GPUMIG},
		"zero slots":       {Mode: GPUMPS},
		"too many slots":   {Mode: GPUTimeSlice, Slots: MaxSlots + 1},
		"exclusive slots":  {Mode: GPUExclusive, Slots: 2},
		"unknown":          {Mode: "shared"},
	} {
		_, err := l.Atoms(gpu, mem)
		require.Error(t, err, name)
		require.Equal(t, CodeInvalidArgument, CodeOf(err), name)
	}
}

func TestMIGComputeSlices(t *testing.T) {
	t.Parallel()
	no, yes := false, true
	for _, tc := range []struct {
		model    string
		reported *bool
		want     int
	}{
		{"H100-80GB", nil, 7}, {"a100", nil, 7}, {"A100-SXM4-80GB", nil, 7}, {"NVIDIA H200 NVL", nil, 7},
		{"GH200-96GB", nil, 7}, {"B200-180GB", nil, 7}, {"A30-24GB", nil, 4},
		{"L4-24GB", nil, 0}, {"L40S-48GB", nil, 0}, {"T4-16GB", nil, 0}, {"RTX4090-24GB", nil, 0}, {"H1000", nil, 0},
		{"H100-80GB", &no, 0}, {"L4-24GB", &yes, 7}, {"A30-24GB", &yes, 4},
	} {
		require.Equal(t, tc.want, MIGComputeSlices(tc.model, tc.reported), "%s %v", tc.model, tc.reported)
	}
}

// A MIG layout's memory is counted in GiB, as its atoms' is: the real
// profiles of each GPU fit it (the drivers' reported memory is a little
// under the profiles' sum), and one GB more than the GPU has is refused,
// 7g.81gb on an 80 GB A100 included.
func TestLayoutMIGMemoryFitsTheRealProfiles(t *testing.T) {
	t.Parallel()
	gpus := []struct {
		name     string
		memoryMB int64 // as nvidia-smi reports memory.total
		fit      [][]string
		tooBig   []string
	}{
		{"A100 80GB", 81920, [][]string{
			{"1g.10gb"}, {"1g.20gb"}, {"2g.20gb"}, {"3g.40gb"}, {"4g.40gb"}, {"7g.80gb"},
			{"4g.40gb", "3g.40gb"}, {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"},
			{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"},
		}, []string{"7g.81gb"}},
		{"A100 40GB", 40960, [][]string{{"7g.40gb"}, {"1g.5gb", "2g.10gb", "3g.20gb"}}, []string{"7g.41gb"}},
		{"H100 80GB", 81559, [][]string{{"7g.80gb"}, {"4g.40gb", "3g.40gb"}}, []string{"7g.81gb"}},
		{"H200", 143771, [][]string{{"7g.141gb"}, {"3g.71gb", "2g.35gb", "1g.35gb"}}, []string{"7g.142gb"}},
	}
	for _, g := range gpus {
		for _, layout := range g.fit {
			_, err := GPULayout{Mode: GPUMIG, MIG: layout}.Atoms("GPU-1", g.memoryMB)
			require.NoError(t, err, "%s: %v", g.name, layout)
		}
		_, err := GPULayout{Mode: GPUMIG, MIG: g.tooBig}.Atoms("GPU-1", g.memoryMB)
		require.Error(t, err, "%s: %v", g.name, g.tooBig)
		require.Equal(t, CodeInvalidArgument, CodeOf(err))
		require.Contains(t, err.Error(), "MIG layout uses")
	}
}
