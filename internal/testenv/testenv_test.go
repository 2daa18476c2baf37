package testenv_test

import (
	"fmt"
	"testing"

	"github.com/bettercompute/compute/internal/testenv"
)

// recorder is a testing.TB that records how Require ended the test.
type recorder struct {
	testing.TB
	ended string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.ended = "failed: " + fmt.Sprintf(format, args...)
}
func (r *recorder) Skipf(format string, args ...any) {
	r.ended = "skipped: " + fmt.Sprintf(format, args...)
}

// An unmet requirement skips outside CI and fails under CI=true; a met
// one does neither.
func TestRequire(t *testing.T) {
	t.Setenv("CI", "")
	r := &recorder{TB: t}
	testenv.Require(r, false, "needs %s", "runc")
	if r.ended != "skipped: needs runc" {
		t.Fatalf("outside CI: %q", r.ended)
	}
	t.Setenv("CI", "true")
	r = &recorder{TB: t}
	testenv.Require(r, false, "needs %s", "runc")
	if r.ended != "failed: CI=true and a requirement is not met: needs runc" {
		t.Fatalf("under CI: %q", r.ended)
	}
	r = &recorder{TB: t}
	testenv.Require(r, true, "needs nothing")
	if r.ended != "" {
		t.Fatalf("a met requirement ended the test: %q", r.ended)
	}
}
