package client_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The generated client is what docs/openapi.yaml generates today, like
// `sqlc diff` for internal/db: a change to the API description that was not
// followed by `make client` fails here.
func TestGeneratedClientIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	t.Parallel()
	out := filepath.Join(t.TempDir(), "openapi.gen.go")
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", "-o", out, "../docs/openapi.yaml")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("openapi.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("client/openapi.gen.go is not what docs/openapi.yaml generates (%d bytes, want %d): run `make client`",
			len(got), len(want))
	}
}
