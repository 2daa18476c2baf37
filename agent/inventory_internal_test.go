package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Fake inventories name models as real ones are: the pools' and quotas'
// "H100-80GB", with the memory in MiB.
func TestFakeGPUsNameModelsLikeRealOnes(t *testing.T) {
	gpus, err := FakeGPUs("n1", "8xH100-80GB,2xL4-24GB")
	require.NoError(t, err)
	require.Len(t, gpus, 10)
	require.Equal(t, GPU{UUID: "GPU-n1-0", Model: "H100-80GB", MemoryMB: 81920}, gpus[0])
	require.Equal(t, GPU{UUID: "GPU-n1-9", Model: "L4-24GB", MemoryMB: 24576}, gpus[9])
	none, err := FakeGPUs("n1", NoGPUs)
	require.NoError(t, err)
	require.Empty(t, none)
	_, err = FakeGPUs("n1", "8xH100")
	require.ErrorContains(t, err, "want <count>x<model>-<memory>GB")
}

func TestModelName(t *testing.T) {
	for _, c := range []struct {
		name string
		mib  int64
		want string
	}{
		{"NVIDIA H100 80GB HBM3", 81559, "H100-80GB"},
		{"NVIDIA H100 PCIe", 81559, "H100-80GB"},
		{"NVIDIA A100-SXM4-40GB", 40960, "A100-40GB"},
		{"NVIDIA A100-SXM4-80GB", 81920, "A100-80GB"},
		{"NVIDIA A100-PCIE-40GB", 40536, "A100-40GB"},
		{"NVIDIA L4", 23034, "L4-24GB"},
		{"NVIDIA A10G", 23028, "A10G-24GB"},
		{"NVIDIA L40S", 46068, "L40S-48GB"},
		{"Tesla V100-SXM2-16GB", 16160, "V100-16GB"},
		{"NVIDIA RTX A6000", 49140, "RTXA6000-48GB"},
		{"NVIDIA H100 NVL", 95830, "H100-96GB"},     // 93.6 GiB: 96 is within 10%
		{"NVIDIA Tiny", 5 * 1024, "Tiny-5GB"},       // 8 is not within 10% of 5: rounded
		{"NVIDIA GH200 480GB", 97871, "GH200-96GB"}, // the GPU's own memory
	} {
		got, err := ModelName(c.name, c.mib)
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, got, c.name)
	}
	_, err := ModelName("NVIDIA", 1024)
	require.Error(t, err)
}

// stubNvidiaSMI puts the recorded nvidia-smi first on PATH, playing back
// recording.
func stubNvidiaSMI(t *testing.T, recording string) {
	bin, err := filepath.Abs("testdata/bin")
	require.NoError(t, err)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("NVIDIA_SMI_RECORDING", recording)
}

func TestNvidiaSMIInventoryOfAnH100Node(t *testing.T) {
	stubNvidiaSMI(t, "h100x8")
	gpus, err := inventoryGPUs(context.Background(), "n1", "")
	require.NoError(t, err)
	require.Len(t, gpus, 8)
	for _, g := range gpus {
		require.Equal(t, "H100-80GB", g.Model)
		require.Equal(t, "NVIDIA H100 80GB HBM3", g.Name)
		require.Equal(t, int64(81559), g.MemoryMB)
		require.False(t, g.MIGEnabled)
		require.Equal(t, new(true), g.MIGCapable, "MIG mode Disabled: it has MIG")
		require.Empty(t, g.MIG)
	}
	require.Equal(t, "GPU-8c1f7a52-3f0e-2b7d-91a4-5e0c6d1b9f01", gpus[0].UUID)
	require.Equal(t, "GPU-c91b6f2d-05a8-e743-6d1c-b8f3e0a5c208", gpus[7].UUID)
	join := joinGPUs(gpus)
	require.Equal(t, GPU{UUID: gpus[0].UUID, Model: "H100-80GB", MemoryMB: 81559}, join[0])
}

func TestNvidiaSMIInventoryWithMIG(t *testing.T) {
	stubNvidiaSMI(t, "a100-mig")
	gpus, err := NvidiaSMIGPUs(context.Background())
	require.NoError(t, err)
	require.Len(t, gpus, 2)
	a100, l4 := gpus[0], gpus[1]
	require.Equal(t, "A100-40GB", a100.Model)
	require.True(t, a100.MIGEnabled)
	require.Equal(t, new(true), a100.MIGCapable)
	require.Len(t, a100.MIG, 3)
	require.Equal(t, "MIG-c6d4f1ef-42e4-5de3-91c7-45d71585b4a4", a100.MIG[0].UUID)
	require.Equal(t, "3g.20gb", a100.MIG[0].Profile)
	require.Equal(t, "1g.5gb", a100.MIG[2].Profile)
	require.Equal(t, 2, a100.MIG[2].Index)
	require.Equal(t, "L4-24GB", l4.Model)
	require.False(t, l4.MIGEnabled)
	require.Equal(t, new(false), l4.MIGCapable, "MIG mode [N/A]: an L4 has no MIG")
	require.Empty(t, l4.MIG)
}

func TestNvidiaSMIFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("exit 9", func(t *testing.T) {
		stubNvidiaSMI(t, "fail")
		_, err := inventoryGPUs(ctx, "n1", "")
		require.ErrorContains(t, err, "nvidia-smi --query-gpu=uuid,name,memory.total,mig.mode.current --format=csv,noheader,nounits failed (exit status 9: NVIDIA-SMI has failed")
		require.ErrorContains(t, err, "--fake-gpus none")
	})
	t.Run("garbage", func(t *testing.T) {
		stubNvidiaSMI(t, "garbage")
		_, err := inventoryGPUs(ctx, "n1", "")
		require.ErrorContains(t, err, `cannot read nvidia-smi --query-gpu line 1 "Failed to initialize NVML: Driver/library version mismatch": 1 fields`)
	})
	t.Run("missing", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, err := inventoryGPUs(ctx, "n1", "")
		require.ErrorContains(t, err, "nvidia-smi")
		require.ErrorContains(t, err, "is the NVIDIA driver loaded?")
	})
	t.Run("garbage list", func(t *testing.T) {
		_, err := parseGPUList([]byte("GPU 0: NVIDIA L4 (UUID: GPU-1)\nsomething else\n"))
		require.ErrorContains(t, err, `cannot read nvidia-smi -L line 2 "something else"`)
	})
	t.Run("bad memory", func(t *testing.T) {
		_, err := parseGPUQuery([]byte("GPU-1, NVIDIA L4, lots, Disabled\n"))
		require.ErrorContains(t, err, "memory.total is not a positive number of MiB")
	})
	t.Run("no GPU", func(t *testing.T) {
		_, err := parseGPUQuery(nil)
		require.ErrorContains(t, err, "lists no GPU")
	})
}
