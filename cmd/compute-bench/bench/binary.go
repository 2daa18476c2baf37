package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// computePackage is the server program the end-to-end measurements run as
// `compute serve` child processes.
const computePackage = "github.com/bettercompute/compute/cmd/compute"

// BuildCompute builds cmd/compute into dir (as `make build` does, with the
// go command on PATH) and returns the binary's path. The benchmark is a
// program of its own, so the server it measures is built, not itself.
func BuildCompute(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "compute")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, computePackage)
	cmd.Env = os.Environ()
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", computePackage, err, b)
	}
	return out, nil
}
