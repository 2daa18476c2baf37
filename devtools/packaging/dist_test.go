package packaging_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeGo stands in for the go command in `make dist`: it writes, where the
// binary would go, the environment and arguments it was called with. The
// archive's layout is then checked in a second, not after a two-minute
// cross-compilation.
const fakeGo = `#!/bin/sh
out=""
prev=""
for a in "$@"; do
	[ "$prev" = "-o" ] && out="$a"
	prev="$a"
done
[ -n "$out" ] || { echo "fake go: no -o in $*" >&2; exit 2; }
# The output path (a temporary directory) is left out, as a real build
# leaves it out of the binary.
{ echo "GOOS=$GOOS GOARCH=$GOARCH CGO_ENABLED=$CGO_ENABLED"; printf '%s\n' "$@" | grep -vxF "$out"; } >"$out.tmp"
mv "$out.tmp" "$out"
`

const testVersion = "v9.9.9-test"

// TestDistArchiveLayout runs `make dist` for both architectures with a
// stand-in go command and checks each archive's files, modes and owners,
// the build's flags, SHA256SUMS, and that a second run gives the same
// bytes.
func TestDistArchiveLayout(t *testing.T) {
	requireTools(t, "make", "tar", "gzip", "sh")
	dir := t.TempDir()
	goCmd := filepath.Join(dir, "go")
	if err := os.WriteFile(goCmd, []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	first := runDist(t, filepath.Join(dir, "first"), "GO="+goCmd, "ARCHES=amd64 arm64")

	sums := readSums(t, first)
	if len(sums) != 2 {
		t.Fatalf("SHA256SUMS lists %d archives, want 2: %v", len(sums), sums)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		name := fmt.Sprintf("compute_%s_linux_%s", testVersion, arch)
		archive := filepath.Join(first, name+".tar.gz")
		b, err := os.ReadFile(archive)
		if err != nil {
			t.Fatalf("make dist wrote no %s: %v", filepath.Base(archive), err)
		}
		if sum := sha256.Sum256(b); sums[name+".tar.gz"] != hex.EncodeToString(sum[:]) {
			t.Errorf("SHA256SUMS says %s for %s, the file hashes to %x", sums[name+".tar.gz"], name, sum)
		}
		files := readArchive(t, archive)
		want := []string{name + "/", name + "/README.md", name + "/compute",
			name + "/systemd/", name + "/systemd/compute-agent.env", name + "/systemd/compute-agent.service",
			name + "/systemd/compute-serve.env", name + "/systemd/compute-serve.service"}
		for _, doc := range docsTree(t) {
			want = append(want, name+"/"+doc)
		}
		if _, err := os.Stat(filepath.Join(repo, "LICENSE")); err == nil {
			want = append(want, name+"/LICENSE")
		}
		slices.Sort(want)
		var got []string
		for path, f := range files {
			got = append(got, path)
			mode := int64(0o644)
			if strings.HasSuffix(path, "/") || path == name+"/compute" {
				mode = 0o755
			}
			if f.hdr.Mode != mode || f.hdr.Uid != 0 || f.hdr.Gid != 0 {
				t.Errorf("%s: mode %o uid %d gid %d, want %o 0 0", path, f.hdr.Mode, f.hdr.Uid, f.hdr.Gid, mode)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s holds\n%s\nwant\n%s", filepath.Base(archive), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		build := string(files[name+"/compute"].body)
		for _, flag := range []string{"GOOS=linux GOARCH=" + arch + " CGO_ENABLED=0", "\n-trimpath\n",
			"-X main.version=" + testVersion, "-X main.commit=0123abc", "\n./cmd/compute\n"} {
			if !strings.Contains(build, flag) {
				t.Errorf("%s was built without %q; the build was:\n%s", name, flag, build)
			}
		}
		requireLinkVars(t, build)
		requireReferencesShipped(t, name, files)
		for inArchive, inRepo := range map[string]string{"README.md": "README.md",
			"docs/configuration.md": "docs/configuration.md", "docs/console/fleet.png": "docs/console/fleet.png",
			"systemd/compute-agent.service": "packaging/systemd/compute-agent.service"} {
			src, err := os.ReadFile(filepath.Join(repo, inRepo))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(files[name+"/"+inArchive].body, src) {
				t.Errorf("%s/%s differs from %s", name, inArchive, inRepo)
			}
		}
	}

	second := runDist(t, filepath.Join(dir, "second"), "GO="+goCmd, "ARCHES=amd64 arm64")
	a, _ := os.ReadFile(filepath.Join(first, "SHA256SUMS"))
	b, _ := os.ReadFile(filepath.Join(second, "SHA256SUMS"))
	if !bytes.Equal(a, b) {
		t.Errorf("two runs of make dist gave different archives:\n%s\n%s", a, b)
	}
}

// TestDistBuildsAStaticBinary is the real `make dist` for linux/amd64: it
// compiles the whole server (minutes on a cold build cache), so it runs
// only with COMPUTE_DIST_BUILD=1.
func TestDistBuildsAStaticBinary(t *testing.T) {
	if os.Getenv("COMPUTE_DIST_BUILD") != "1" {
		t.Skip("set COMPUTE_DIST_BUILD=1 to build a real release archive (a cold build takes minutes)")
	}
	requireTools(t, "make", "tar", "gzip", "sh", "go")
	out := runDist(t, t.TempDir(), "ARCHES=amd64")
	name := "compute_" + testVersion + "_linux_amd64"
	files := readArchive(t, filepath.Join(out, name+".tar.gz"))
	bin := filepath.Join(t.TempDir(), "compute")
	if err := os.WriteFile(bin, files[name+"/compute"].body, 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	for key, want := range map[string]string{"-trimpath": "true", "CGO_ENABLED": "0", "GOOS": "linux", "GOARCH": "amd64"} {
		if settings[key] != want {
			t.Errorf("build setting %s = %q, want %q", key, settings[key], want)
		}
	}
	// -trimpath keeps -ldflags out of the build information, so the
	// version can be in the binary only as main.version's value.
	if !bytes.Contains(files[name+"/compute"].body, []byte(testVersion)) {
		t.Errorf("the binary does not hold %s: main.version was not set", testVersion)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary asks for a dynamic loader: not static")
		}
	}
	if f.Machine != elf.EM_X86_64 {
		t.Errorf("machine %v, want x86-64", f.Machine)
	}
}

// runDist runs `make dist` from the repository root into dir, with the
// test's version and commit and any further make variables, and returns dir.
func runDist(t *testing.T, dir string, vars ...string) string {
	t.Helper()
	args := append([]string{"--no-print-directory", "-C", repo, "dist",
		"DIST=" + dir, "VERSION=" + testVersion, "COMMIT=0123abc"}, vars...)
	cmd := exec.Command("make", args...)
	// A make above this test (make test) must not hand its flags down.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=")
	})
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir
}

// readSums reads SHA256SUMS: file name → hex digest.
func readSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		sum, file, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not `<sum>  <file>`", line)
		}
		sums[file] = sum
	}
	return sums
}

type archived struct {
	hdr  *tar.Header
	body []byte
}

// readArchive returns a .tar.gz's entries by name.
func readArchive(t *testing.T, path string) map[string]archived {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]archived{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(hdr.Name, "./")
		out[name] = archived{hdr, body}
	}
}

func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
}
