// Command depspatches lists every module required in go.mod whose newest
// patch release (same major.minor) is newer than the version go.mod
// requires: the updates that should carry only fixes, which `make
// deps-patches` shows so they are taken on purpose rather than found late.
// A newer minor or major is not listed; `go list -m -u all` shows those.
//
// It asks the module proxy (GOPROXY) once, with one `go list -m -e -json
// path@vMAJOR.MINOR` query per requirement. Without a proxy it says so and
// exits 1; modules the proxy would not answer for are named on stderr and
// the rest still listed.
//
//	go run ./devtools/depspatches   # or: make deps-patches
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"text/tabwriter"
)

func main() { os.Exit(run(os.Stdout, os.Stderr)) }

func run(stdout, stderr io.Writer) int {
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	var mod struct{ Require []requirement }
	out, err := exec.Command(goCmd, "mod", "edit", "-json").Output()
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err != nil {
		fmt.Fprintf(stderr, "depspatches: read go.mod: %v\n", exitErr(err))
		return 1
	}
	args := []string{"list", "-m", "-e", "-json"}
	queried := 0
	for _, r := range mod.Require {
		if q, ok := minorQuery(r.Version); ok {
			args = append(args, r.Path+"@"+q)
			queried++
		}
	}
	cmd := exec.Command(goCmd, args...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err = cmd.Output()
	if err != nil {
		fmt.Fprintf(stderr, "depspatches: go list: %v\n%s", err, errOut.Bytes())
		return 1
	}
	answers, err := decode(out)
	if err != nil {
		fmt.Fprintf(stderr, "depspatches: %v\n", err)
		return 1
	}
	patches, failed := compare(mod.Require, answers)
	if len(failed) > 0 && len(failed) == queried {
		fmt.Fprintf(stderr, "depspatches: the module proxy is unreachable (GOPROXY=%s): no module was checked.\n  first error: %s\n",
			goEnv(goCmd, "GOPROXY"), failed[0].Err)
		return 1
	}
	if len(patches) == 0 {
		fmt.Fprintf(stdout, "every required module is at the newest patch of its minor (%d checked)\n", queried-len(failed))
	} else {
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "MODULE\tGO.MOD\tNEWEST PATCH\t")
		for _, p := range patches {
			note := ""
			if p.Indirect {
				note = "indirect"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", p.Path, p.Current, p.Newest, note)
		}
		w.Flush()
	}
	if len(failed) > 0 {
		fmt.Fprintf(stderr, "depspatches: %d modules could not be checked (the proxy did not answer for them):\n", len(failed))
		for _, f := range failed {
			fmt.Fprintf(stderr, "  %s: %s\n", f.Path, f.Err)
		}
	}
	return 0
}

// decode reads the stream of JSON objects `go list -m -json` writes.
func decode(b []byte) ([]found, error) {
	var out []found
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var f found
		if err := dec.Decode(&f); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("decode go list: %w", err)
		}
		out = append(out, f)
	}
}

// exitErr adds a failed command's stderr to its error.
func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	return err
}

// goEnv is a go env variable, for the message that names the proxy.
func goEnv(goCmd, name string) string {
	out, err := exec.Command(goCmd, "env", name).Output()
	if err != nil {
		return "?"
	}
	return string(bytes.TrimSpace(out))
}
