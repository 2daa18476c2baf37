package docs

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The documentation must stand on its own: a reader of docs/ or the README
// has this repository and nothing else, so nothing may point outside it,
// and every link must lead to a file (and a heading) that exists.

// root is the repository, seen from this package's directory.
const root = ".."

// outsideRefs are references to material that is not in the repository.
// They are spelled in parts so that this file, which the test reads too,
// does not contain them: a grep of docs/ for the first finds nothing.
var outsideRefs = []string{
	"shared" + "/",
	"FACTS" + ".md",
	"consistency" + ".md",
	"consistency " + "specification",
}

// TestDocsReferNothingOutsideTheRepository fails on every line of a file in
// docs/ or of README.md that names a file the reader does not have.
func TestDocsReferNothingOutsideTheRepository(t *testing.T) {
	files := append(walk(t, ".", func(string) bool { return true }), filepath.Join(root, "README.md"))
	patterns := make([]*regexp.Regexp, len(outsideRefs))
	for i, r := range outsideRefs {
		words := strings.Fields(r)
		for j, w := range words {
			words[j] = regexp.QuoteMeta(w)
		}
		// A phrase may be broken across lines.
		patterns[i] = regexp.MustCompile(`(?i)` + strings.Join(words, `\s+`))
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, re := range patterns {
			for _, m := range re.FindAllIndex(b, -1) {
				t.Errorf("%s:%d refers to %q, which is not in the repository: explain it here instead",
					rel(path), bytes.Count(b[:m[0]], []byte("\n"))+1, outsideRefs[i])
			}
		}
	}
}

// TestDocLinksResolve fails on every markdown link (inline, image or
// reference definition) that is not a URL and does not lead to an existing
// file of the repository, or names a heading its target does not have; and
// on every docs/, examples/ or packaging/ path named in the text that does
// not exist.
func TestDocLinksResolve(t *testing.T) {
	files := append(walk(t, ".", isMarkdown), filepath.Join(root, "README.md"))
	repo, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, path := range files {
		for _, l := range links(t, path) {
			checked++
			target, anchor, _ := strings.Cut(l.target, "#")
			target, _, _ = strings.Cut(target, "?")
			dest := path // "#anchor": this file
			switch {
			case strings.HasPrefix(target, "/"):
				dest = filepath.Join(root, filepath.FromSlash(target))
			case target != "":
				dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(target))
			}
			abs, err := filepath.Abs(dest)
			if err != nil {
				t.Fatal(err)
			}
			if r, err := filepath.Rel(repo, abs); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				t.Errorf("%s:%d links to %s, outside the repository", rel(path), l.line, l.target)
				continue
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s:%d links to %s, which does not exist", rel(path), l.line, l.target)
				continue
			}
			if anchor != "" && isMarkdown(dest) && !headings(t, dest)[anchor] {
				t.Errorf("%s:%d links to %s: %s has no heading #%s", rel(path), l.line, l.target, rel(dest), anchor)
			}
		}
		for _, p := range namedPaths(t, path) {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p.target))); err != nil {
				t.Errorf("%s:%d names %s, which does not exist", rel(path), p.line, p.target)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("found %d links in %d files: the scan is broken", checked, len(files))
	}
}

// TestLinkScan checks the scanner itself on the forms it must find and the
// ones it must leave alone.
func TestLinkScan(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.md")
	text := "# Title\n" +
		"See [a](a.md) and ![img](pics/b.png \"title\"), [web](https://example.com), [mail](mailto:x@y),\n" +
		"`[not](code.md)` and [anchor](#title).\n" +
		"```go\nf := m[k](x.md)\n```\n" +
		"[ref]: ../c.md\n" +
		"Named: docs/d.md `examples/e/main.go`, bench/f.json, docs/<date>.md docs/g.md.\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range links(t, path) {
		got = append(got, l.target)
	}
	want := []string{"a.md", "pics/b.png", "#title", "../c.md"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("links = %q, want %q", got, want)
	}
	got = nil
	for _, p := range namedPaths(t, path) {
		got = append(got, p.target)
	}
	want = []string{"docs/d.md", "examples/e/main.go", "docs/g.md"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("named paths = %q, want %q", got, want)
	}
	if !headings(t, path)["title"] {
		t.Errorf("heading #title not found in %s", path)
	}
	for heading, slug := range map[string]string{
		"Assignments, desired state and generations": "assignments-desired-state-and-generations",
		"`compute agent` under systemd":              "compute-agent-under-systemd",
		"Tenant vs fleet — the daemon":               "tenant-vs-fleet--the-daemon",
	} {
		if got := slugify(heading); got != slug {
			t.Errorf("slugify(%q) = %q, want %q", heading, got, slug)
		}
	}
}

// ref is a link target or a named path, with the line it is on.
type ref struct {
	target string
	line   int
}

var (
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	// namedPath is a path into docs/, examples/ or packaging/ written in the
	// text, with a file extension; placeholders (<date>, *) do not match.
	namedPath = regexp.MustCompile(`(?:^|[\s(` + "`" + `"'])((?:docs|examples|packaging)/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.[a-z]{1,8})(?:$|[\s)` + "`" + `"',;:.])`)
	isURL     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// links returns the link targets of a markdown file that name a file or a
// heading: not URLs (any scheme), not inside code.
func links(t *testing.T, path string) []ref {
	var out []ref
	scanProse(t, path, func(n int, line string) {
		line = codeSpan.ReplaceAllString(line, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := refDef.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if !isURL.MatchString(target) {
				out = append(out, ref{target, n})
			}
		}
	})
	return out
}

// namedPaths returns the repository paths written in a file's prose or
// code spans (fenced code blocks excepted), links excluded.
func namedPaths(t *testing.T, path string) []ref {
	var out []ref
	scanProse(t, path, func(n int, line string) {
		// Doubled spaces: a match consumes the character after it, which
		// may be the one before the next.
		line = strings.ReplaceAll(inlineLink.ReplaceAllString(line, ""), " ", "  ")
		for _, m := range namedPath.FindAllStringSubmatch(line, -1) {
			out = append(out, ref{m[1], n})
		}
	})
	return out
}

// headings returns the anchors of a markdown file's headings, as GitHub
// makes them.
func headings(t *testing.T, path string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	scanProse(t, path, func(_ int, line string) {
		if !strings.HasPrefix(line, "#") {
			return
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		slug := slugify(text)
		if k := seen[slug]; k > 0 {
			out[slug+"-"+itoa(k)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	})
	return out
}

// slugify is GitHub's heading anchor: lower case, letters, digits, spaces,
// hyphens and underscores kept, spaces become hyphens.
func slugify(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func itoa(n int) string {
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// scanProse calls fn with every line of a file outside fenced code blocks,
// numbered from 1.
func scanProse(t *testing.T, path string, fn func(n int, line string)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	fence := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence = trimmed[:3]
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		fn(n, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// walk returns the files under dir that keep says to.
func walk(t *testing.T, dir string, keep func(string) bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && keep(path) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func isMarkdown(path string) bool { return strings.HasSuffix(path, ".md") }

// rel names a file from the repository root, as a reader would look for it.
func rel(path string) string {
	if r, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(filepath.Join("docs", path))
}
