package layers_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/bettercompute/compute/devtools/layers"
)

const module = "github.com/bettercompute/compute"

// pkg is the part of `go list -json` this test reads. Imports are the
// package's own, test files excluded: a test may reach up to build its
// fixture, the product may not. TestImports and XTestImports are its test
// files' imports, which only the closure rules read.
type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// TestImportsRunDownward fails on every import from a lower layer to a
// higher one, naming both packages and their layers, and on a package the
// table does not place.
func TestImportsRunDownward(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs, err := decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages: the module was not listed", len(pkgs))
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestAnUpwardImportIsNamed proves the check can fail: a package of the
// commands layer that imports httpapi is reported.
func TestAnUpwardImportIsNamed(t *testing.T) {
	got := violations([]pkg{{ImportPath: module + "/commands", Imports: []string{module + "/httpapi", module + "/core"}}})
	want := "commands (layer 4: commands) imports httpapi (layer 7: httpapi, console, client): an upward import"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("violations = %q, want [%q]", got, want)
	}
	if got := violations([]pkg{{ImportPath: module + "/devtools/withpg", Imports: []string{module + "/internal/pg/cluster"}}}); len(got) != 0 {
		t.Fatalf("a tool importing internal is downward, got %q", got)
	}
}

// TestAClosedPackageImportsNothingOfTheModule proves the closure rule can
// fail: the client importing core, or a client test importing webhook, is
// reported, and so is the command line importing commands or its test a
// database fixture; the client importing itself is not.
func TestAClosedPackageImportsNothingOfTheModule(t *testing.T) {
	got := violations([]pkg{{
		ImportPath:   module + "/client",
		Imports:      []string{module + "/core", "net/http"},
		XTestImports: []string{module + "/client", module + "/webhook"},
	}})
	want := []string{
		"client imports core: client may import nothing of this module but itself (the API's Go client: a program that uses it links no server code)",
		"client (tests) imports webhook: client may import nothing of this module but itself (the API's Go client: a program that uses it links no server code)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("violations = %q, want %q", got, want)
	}
	got = violations([]pkg{{
		ImportPath:   module + "/examples/webhook-consumer",
		Imports:      []string{module + "/client", module + "/webhook"},
		XTestImports: []string{module + "/webhook"},
	}})
	want = []string{"examples/webhook-consumer imports webhook: examples may import of this module only itself and client (examples are copied into programs that link no server code)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("violations = %q, want %q", got, want)
	}
	got = violations([]pkg{{
		ImportPath:  module + "/cmd/compute/cli",
		Imports:     []string{module + "/client", module + "/core", module + "/commands"},
		TestImports: []string{module + "/internal/pg/pgtest"},
	}})
	want = []string{
		"cmd/compute/cli imports commands: cmd/compute/cli may import of this module only itself and client, core (the command line talks to the server through client; main hands it what needs the server)",
		"cmd/compute/cli (tests) imports internal/pg/pgtest: cmd/compute/cli may import of this module only itself and client, core (the command line talks to the server through client; main hands it what needs the server)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("violations = %q, want %q", got, want)
	}
	if got := violations([]pkg{{ImportPath: module + "/client/sub", Imports: []string{module + "/client"}}}); len(got) != 0 {
		t.Fatalf("a subpackage of client importing client is inside the closure, got %q", got)
	}
}

func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		from := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		out = append(out, closureViolations(from, p)...)
		out = append(out, barViolations(from, p)...)
		lf := layers.Of(from)
		if lf < 0 {
			out = append(out, fmt.Sprintf("%s is in no layer: add it to layers.Table and docs/architecture.md", from))
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := strings.TrimPrefix(imp, module+"/")
			lt := layers.Of(to)
			if lt > lf {
				out = append(out, fmt.Sprintf("%s (layer %d: %s) imports %s (layer %d: %s): an upward import",
					from, lf, strings.Join(layers.Table[lf], ", "), to, lt, strings.Join(layers.Table[lt], ", ")))
			}
		}
	}
	return out
}

// barViolations reports the barred imports of a package: of its own files,
// and of its test files when the bar covers tests.
func barViolations(from string, p pkg) []string {
	var out []string
	for _, b := range layers.BarsOf(from) {
		check := func(what string, imports []string) {
			for _, imp := range imports {
				to := strings.TrimPrefix(imp, module+"/")
				if to == b.Import || strings.HasPrefix(to, b.Import+"/") {
					out = append(out, fmt.Sprintf("%s imports %s, which it may not (%s)", what, to, b.Why))
				}
			}
		}
		check(from, p.Imports)
		if b.Tests {
			check(from+" (tests)", append(append([]string{}, p.TestImports...), p.XTestImports...))
		}
	}
	return out
}

// TestABarredImportIsNamed proves the bar can fail: httpapi importing
// internal/db, in its code or its tests, is reported; commands is not
// barred.
func TestABarredImportIsNamed(t *testing.T) {
	got := violations([]pkg{
		{ImportPath: module + "/httpapi", Imports: []string{module + "/internal/db"}},
		{ImportPath: module + "/cmd/compute", XTestImports: []string{module + "/internal/db"}},
		{ImportPath: module + "/commands", Imports: []string{module + "/internal/db"}},
	})
	want := []string{
		"httpapi imports internal/db, which it may not (they call commands and queries; rows and SQLSTATEs stay in the packages that own the tables)",
		"cmd/compute (tests) imports internal/db, which it may not (they call commands and queries; rows and SQLSTATEs stay in the packages that own the tables)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("violations = %q, want %q", got, want)
	}
}

// closureViolations reports the imports of a package under a closure rule
// that leave it: of its own files, and of its test files when the rule
// covers tests.
func closureViolations(from string, p pkg) []string {
	c := layers.ClosureOf(from)
	if c == nil {
		return nil
	}
	may := "nothing of this module but itself"
	if len(c.May) > 0 {
		may = "of this module only itself and " + strings.Join(c.May, ", ")
	}
	var out []string
	check := func(what string, imports []string) {
		for _, imp := range imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if to := strings.TrimPrefix(imp, module+"/"); !c.Allows(to) {
				out = append(out, fmt.Sprintf("%s imports %s: %s may import %s (%s)", what, to, c.Dir, may, c.Why))
			}
		}
	}
	check(from, p.Imports)
	if c.Tests {
		check(from+" (tests)", append(append([]string{}, p.TestImports...), p.XTestImports...))
	}
	return out
}

func decode(b []byte) ([]pkg, error) {
	var out []pkg
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("decode go list: %w", err)
		}
		out = append(out, p)
	}
}
