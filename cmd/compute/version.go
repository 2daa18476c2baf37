package main

// version is the release version and commit the commit the binary was
// built from. `make dist` and the Dockerfile set them at link time
// (-ldflags "-X main.version=v1.2.3 -X main.commit=…"), the version from
// `git describe --tags --always --dirty`; they stay in package main so
// that those flags name the same variables whatever package reads them.
// A plain `go build` leaves both empty; --version and the CLI's
// User-Agent then fall back to the build information runtime/debug
// records. Only the linker writes them; program hands them to package
// cli.
var version, commit string
