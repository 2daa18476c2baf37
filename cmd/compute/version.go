package main

// commit is the commit the binary was built from. `make dist` and the
// Dockerfile set it at link time (-ldflags "-X main.commit=…"), together
// with main.version (declared with the CLI's root command), whose value
// comes from `git describe --tags --always --dirty`. A plain `go build`
// leaves both empty; --version then falls back to the build information
// runtime/debug records. Only the linker writes them.
var commit string
