package packaging_test

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docsTree is what a release archive holds of the repository's docs/: every
// file but the Go ones (the package embedding the API's schema, its tests),
// and their directories (named with a trailing slash), relative to the
// repository root.
func docsTree(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(repo, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(repo, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			out = append(out, rel+"/")
		case !strings.HasSuffix(rel, ".go"):
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// docMention is a repository path in a page's text (`docs/cli.md`), and
// relativeLink the target of a Markdown link relative to the page
// ([…](console/fleet.png), [..](../operations/deploy.md#anchor)).
var (
	docMention   = regexp.MustCompile(`(?:^|[^\w./-])(docs/[\w./-]*[\w/])`)
	relativeLink = regexp.MustCompile(`\]\(([^)#:\s]+)(?:#[^)]*)?\)`)
)

// requireReferencesShipped checks that every page of the archive refers only
// to documentation the archive holds: each docs/ file or folder the README
// and the pages name, or link to relative to themselves, that the repository
// has is in the archive too. The archive used to ship README.md,
// configuration.md and deploy.md alone, which send an operator to cli.md,
// security.md, concepts/ and the other operations/ pages.
func requireReferencesShipped(t *testing.T, name string, files map[string]archived) {
	t.Helper()
	for p, f := range files {
		if !strings.HasSuffix(p, ".md") {
			continue
		}
		page := strings.TrimPrefix(p, name+"/")
		text := string(f.body)
		var refs []string
		for _, m := range docMention.FindAllStringSubmatch(text, -1) {
			refs = append(refs, strings.TrimRight(m[1], "."))
		}
		for _, m := range relativeLink.FindAllStringSubmatch(text, -1) {
			refs = append(refs, path.Join(path.Dir(page), m[1]))
		}
		for _, ref := range refs {
			st, err := os.Stat(filepath.Join(repo, filepath.FromSlash(ref)))
			if err != nil || !strings.HasPrefix(ref, "docs/") {
				continue // not documentation of the repository's (source, a URL path, an example)
			}
			entry := name + "/" + strings.TrimSuffix(ref, "/")
			if st.IsDir() {
				entry += "/"
			}
			if _, ok := files[entry]; !ok {
				t.Errorf("%s refers to %s, which the archive does not hold", page, ref)
			}
		}
	}
}
