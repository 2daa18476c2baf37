package docs

import (
	"bytes"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// commentPath is a path into docs/, examples/ or packaging/ written in a Go
// comment, with an optional #heading; placeholders (<date>, *) do not
// match, and a sentence's full stop is not part of the path.
var commentPath = regexp.MustCompile(`(?:^|[\s(` + "`" + `"'\[])((?:docs|examples|packaging)/[A-Za-z0-9_./-]*[A-Za-z0-9_-])(?:#([A-Za-z0-9_-]+))?`)

// TestCodeCommentPathsResolve fails on every docs/, examples/ or packaging/
// path named in a comment of a Go file of the repository that does not
// exist, or names a heading its markdown file does not have: a comment that
// sends the reader to the documentation must send them somewhere.
func TestCodeCommentPathsResolve(t *testing.T) {
	files := goFiles(t)
	checked := 0
	for _, path := range files {
		for _, r := range commentPaths(t, path) {
			checked++
			target, anchor, _ := strings.Cut(r.target, "#")
			dest := filepath.Join(root, filepath.FromSlash(target))
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s:%d names %s, which does not exist", rel(path), r.line, target)
				continue
			}
			if anchor != "" && isMarkdown(dest) && !headings(t, dest)[anchor] {
				t.Errorf("%s:%d names %s: %s has no heading #%s", rel(path), r.line, r.target, target, anchor)
			}
		}
	}
	if len(files) < 100 || checked < 20 {
		t.Fatalf("found %d paths in the comments of %d Go files: the scan is broken", checked, len(files))
	}
}

// TestCommentPathScan checks the scanner on a Go file: paths in comments
// are found, with their lines and headings; paths in code and string
// literals, and placeholders, are not.
func TestCommentPathScan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.go")
	src := "// Package x, see docs/a.md and (docs/concepts/b.md#some-heading).\n" +
		"package x\n\n" +
		"const s = \"docs/not-a-comment.md\"\n\n" +
		"/* A block: examples/e/main.go,\n   docs/<date>.md, docs/*.png and packaging/systemd. */\n" +
		"var v = 1 // trailing: `docs/c.md`.\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range commentPaths(t, path) {
		got = append(got, r.target+":"+itoa(r.line))
	}
	want := []string{"docs/a.md:1", "docs/concepts/b.md#some-heading:1", "examples/e/main.go:6", "packaging/systemd:7", "docs/c.md:8"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("comment paths = %q, want %q", got, want)
	}
}

// commentPaths returns the paths named in the comments of a Go file. It
// reads tokens, not syntax, so a file that does not compile is still read.
func commentPaths(t *testing.T, path string) []ref {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	file := fset.AddFile(path, -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, scanner.ScanComments)
	var out []ref
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok != token.COMMENT {
			continue
		}
		for _, m := range commentPath.FindAllStringSubmatchIndex(lit, -1) {
			target := lit[m[2]:m[3]]
			if m[4] >= 0 {
				target += "#" + lit[m[4]:m[5]]
			}
			out = append(out, ref{target, fset.Position(pos).Line + strings.Count(lit[:m[2]], "\n")})
		}
	}
}

// goFiles returns the repository's tracked Go files, or, where there is no
// git checkout (an unpacked archive), every Go file outside hidden
// directories, vendor and node_modules.
func goFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--", "*.go")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil && len(out) > 0 {
		var files []string
		for _, f := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
			p := filepath.Join(root, filepath.FromSlash(string(f)))
			if _, err := os.Stat(p); err == nil { // deleted in the working tree
				files = append(files, p)
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "vendor" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
