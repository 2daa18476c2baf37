// Package testenv is what tests need of the machine they run on: programs
// they install themselves when they can (root with apt-get, as on a fresh
// CI machine), and a rule for what they cannot get. Outside CI a missing
// requirement skips the test with the reason; under CI=true it fails it,
// so that a green CI run never hides a test that did not run.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// CI reports whether the tests run in CI (CI=true, as .ci/run sets it).
func CI() bool { return os.Getenv("CI") == "true" }

// Require skips t with the reason when ok is false, or fails it under CI.
func Require(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if ok {
		return
	}
	if CI() {
		t.Fatalf("CI=true and a requirement is not met: "+format, args...)
		return
	}
	t.Skipf(format, args...)
}

// Program returns the path of an executable: found on PATH, or at path
// when one is given (a program outside PATH, such as a CNI plugin),
// installing the Debian package pkg first when it is missing and this
// process may (root with apt-get). What cannot be had goes to Require.
func Program(t testing.TB, name, path, pkg string) string {
	t.Helper()
	find := func() (string, bool) {
		if path != "" {
			_, err := os.Stat(path)
			return path, err == nil
		}
		p, err := exec.LookPath(name)
		return p, err == nil
	}
	if p, ok := find(); ok {
		return p
	}
	Require(t, os.Geteuid() == 0, "%s is not installed and installing it needs root (apt-get install -y %s)", name, pkg)
	// A fresh machine has no package lists yet: update once, then install.
	// Tests of several packages may install at once: each waits for
	// dpkg's lock rather than failing on it.
	get := "apt-get -o DPkg::Lock::Timeout=300 "
	install := exec.Command("sh", "-c", get+"install -y "+pkg+" || ("+get+"update && "+get+"install -y "+pkg+")")
	install.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	out, err := install.CombinedOutput()
	Require(t, err == nil, "%s is not installed and apt-get install %s failed: %v\n%s", name, pkg, err, out)
	p, ok := find()
	Require(t, ok, "%s installed (%s) but not found", name, pkg)
	return p
}
