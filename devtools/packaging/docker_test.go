package packaging_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// No Docker engine runs where the tests do, so the Dockerfile is checked
// statically: its stages, the build's flags, the non-root final image, and
// that .dockerignore keeps everything the build compiles or embeds.

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case
	args string
	line int
}

// stage is the instructions from one FROM to the next.
type stage struct {
	from, name string
	body       []instruction
}

var knownInstructions = []string{"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY",
	"ENTRYPOINT", "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}

// TestDockerfile checks the image's shape: a golang:1.26 build stage with a
// static, trimmed, versioned build; the agent stage; and a last stage
// (what `docker build` makes by default) that runs `compute serve` as a
// non-root user on distroless.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	global, stages := readDockerfile(t, filepath.Join(repo, "Dockerfile"))
	var names []string
	for _, s := range stages {
		names = append(names, s.name)
	}
	if !slices.Equal(names, []string{"build", "agent", "serve"}) {
		t.Fatalf("stages %q, want build, agent, serve (serve last: the default image)", names)
	}
	build, agentStage, serve := stages[0], stages[1], stages[2]

	if from := resolveArgs(build.from, global); !strings.Contains(from, "golang:1.26") {
		t.Errorf("build stage FROM %q (%q), want golang:1.26", build.from, from)
	}
	goBuild := ""
	for _, in := range build.body {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			goBuild = in.args
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version=$VERSION",
		"-X main.commit=$COMMIT", "-o /out/compute", "./cmd/compute"} {
		if !strings.Contains(goBuild, want) {
			t.Errorf("the build stage's go build lacks %q: %q", want, goBuild)
		}
	}
	requireLinkVars(t, goBuild)

	if !strings.HasPrefix(serve.from, "gcr.io/distroless/") {
		t.Errorf("serve stage FROM %q, want a distroless image", serve.from)
	}
	user := last(serve, "USER")
	if user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
		t.Errorf("serve stage runs as %q, want a non-root user", user)
	}
	if got := last(serve, "ENTRYPOINT"); got != `["/usr/local/bin/compute"]` {
		t.Errorf("serve ENTRYPOINT %s", got)
	}
	if got := last(serve, "CMD"); got != `["serve"]` {
		t.Errorf("serve CMD %s", got)
	}
	if !strings.Contains(last(agentStage, "ENTRYPOINT"), `"agent"`) {
		t.Errorf("agent ENTRYPOINT %s does not run compute agent", last(agentStage, "ENTRYPOINT"))
	}
	for _, s := range []stage{agentStage, serve} {
		if got := last(s, "COPY"); got != "--from=build /out/compute /usr/local/bin/compute" {
			t.Errorf("%s stage copies %q, want the build stage's binary", s.name, got)
		}
	}
}

// TestDockerignoreKeepsTheBuildsInputs lists every file `go build
// ./cmd/compute` compiles or embeds and fails on one .dockerignore would
// keep out of the build context; and on a context that would ship .git.
func TestDockerignoreKeepsTheBuildsInputs(t *testing.T) {
	t.Parallel()
	patterns := readDockerignore(t, filepath.Join(repo, ".dockerignore"))
	for _, p := range []string{".git", ".compute", "bin", "dist"} {
		if !ignored(patterns, p) {
			t.Errorf(".dockerignore does not keep %s out of the build context", p)
		}
	}
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Dir,GoFiles,EmbedFiles,Module", "./cmd/compute")
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	inputs := []string{"go.mod", "go.sum"}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Dir                 string
			GoFiles, EmbedFiles []string
			Module              *struct{ Main bool }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || !p.Module.Main {
			continue
		}
		for _, f := range append(p.GoFiles, p.EmbedFiles...) {
			rel, err := filepath.Rel(root, filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, filepath.ToSlash(rel))
		}
	}
	if !slices.Contains(inputs, "docs/openapi.yaml") {
		t.Fatalf("go list found no embedded docs/openapi.yaml among %d inputs: the listing is broken", len(inputs))
	}
	for _, f := range inputs {
		if ignored(patterns, f) {
			t.Errorf(".dockerignore leaves out %s, which the image's build needs", f)
		}
	}
}

// requireLinkVars fails unless every -X main.NAME of flags names a
// package-level string variable of cmd/compute: the linker ignores an -X
// for a variable that does not exist, silently.
func requireLinkVars(t *testing.T, flags string) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, filepath.Join(repo, "cmd", "compute"), func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	for _, f := range pkgs["main"].Files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "string" && len(vs.Values) == 0 {
					for _, n := range vs.Names {
						vars[n.Name] = true
					}
				}
			}
		}
	}
	found := regexp.MustCompile(`-X main\.([A-Za-z_][A-Za-z0-9_]*)=`).FindAllStringSubmatch(flags, -1)
	if len(found) < 2 {
		t.Errorf("no -X main.version and main.commit in %q", flags)
	}
	for _, m := range found {
		if !vars[m[1]] {
			t.Errorf("-X main.%s names no uninitialised package-level string in cmd/compute", m[1])
		}
	}
}

// readDockerfile returns the ARGs before the first FROM and the stages.
func readDockerfile(t *testing.T, path string) (map[string]string, []stage) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ins []instruction
	pending, start := "", 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && pending == "") {
			continue
		}
		if pending == "" {
			start = n
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			pending += cont + " "
			continue
		}
		line, pending = pending+line, ""
		cmd, args, _ := strings.Cut(line, " ")
		cmd = strings.ToUpper(cmd)
		if !slices.Contains(knownInstructions, cmd) {
			t.Errorf("Dockerfile:%d: unknown instruction %s", start, cmd)
		}
		ins = append(ins, instruction{cmd, strings.Join(strings.Fields(args), " "), start})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	global := map[string]string{}
	var stages []stage
	for _, in := range ins {
		switch {
		case in.cmd == "FROM":
			words := strings.Fields(in.args)
			words = slices.DeleteFunc(words, func(w string) bool { return strings.HasPrefix(w, "--") })
			s := stage{from: words[0]}
			if len(words) == 3 && strings.EqualFold(words[1], "AS") {
				s.name = words[2]
			}
			stages = append(stages, s)
		case len(stages) == 0 && in.cmd == "ARG":
			k, v, _ := strings.Cut(in.args, "=")
			global[k] = v
		case len(stages) == 0:
			t.Errorf("Dockerfile:%d: %s before the first FROM", in.line, in.cmd)
		default:
			stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
		}
	}
	return global, stages
}

// resolveArgs replaces ${NAME} and $NAME by the global ARGs' defaults.
func resolveArgs(s string, args map[string]string) string {
	return os.Expand(s, func(name string) string { return args[name] })
}

// last returns the arguments of a stage's last instruction of a kind.
func last(s stage, cmd string) string {
	out := ""
	for _, in := range s.body {
		if in.cmd == cmd {
			out = in.args
		}
	}
	return out
}

// readDockerignore returns the patterns of a .dockerignore, cleaned.
func readDockerignore(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		neg := strings.HasPrefix(line, "!")
		p := filepath.ToSlash(filepath.Clean(strings.TrimPrefix(strings.TrimPrefix(line, "!"), "/")))
		if neg {
			p = "!" + p
		}
		out = append(out, p)
	}
	return out
}

// ignored reports whether the build context leaves path out, as Docker
// decides: the last matching pattern wins, "!" keeps, a pattern matching a
// directory covers what is under it, "**" matches any number of
// directories.
func ignored(patterns []string, path string) bool {
	out := false
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		if matchesPathOrParent(strings.TrimPrefix(p, "!"), path) {
			out = !neg
		}
	}
	return out
}

func matchesPathOrParent(pattern, path string) bool {
	parts := strings.Split(path, "/")
	for i := len(parts); i > 0; i-- {
		if matchGlob(strings.Split(pattern, "/"), parts[:i]) {
			return true
		}
	}
	return false
}

// matchGlob matches path elements against pattern elements, "**" standing
// for zero or more elements.
func matchGlob(pattern, parts []string) bool {
	if len(pattern) == 0 {
		return len(parts) == 0
	}
	if pattern[0] == "**" {
		for i := 0; i <= len(parts); i++ {
			if matchGlob(pattern[1:], parts[i:]) {
				return true
			}
		}
		return false
	}
	if len(parts) == 0 {
		return false
	}
	ok, err := filepath.Match(pattern[0], parts[0])
	return err == nil && ok && matchGlob(pattern[1:], parts[1:])
}

// TestDockerignoreMatching checks ignored on the forms .dockerignore uses.
func TestDockerignoreMatching(t *testing.T) {
	t.Parallel()
	patterns := []string{".git", "**/*.test", "docs/console", "bench/results", "compute", "!bench/results/keep.json"}
	for path, want := range map[string]bool{
		".git/HEAD": true, "agent/agent.test": true, "agent.test": true, "docs/console/x.png": true,
		"docs/openapi.yaml": false, "bench/results/a.json": true, "bench/results/keep.json": false,
		"compute": true, "cmd/compute/main.go": false, "console/index.html": false,
	} {
		if got := ignored(patterns, path); got != want {
			t.Errorf("ignored(%s) = %v, want %v", path, got, want)
		}
	}
}
