// Package packaging holds the tests of how compute is shipped: the
// Dockerfile and .dockerignore at the repository root, the systemd units in
// packaging/systemd (checked by systemd-analyze where it is installed, and
// against the flags `compute agent` really accepts), and the release
// archives `make dist` writes. It has no code of its own: what it tests is
// files, a shell script and a Makefile target, which no Go package holds.
package packaging
