package main

import (
	"strconv"
	"strings"
)

// requirement is one requirement of go.mod, as `go mod edit -json` writes it.
type requirement struct {
	Path     string
	Version  string
	Indirect bool
}

// found is one answer of `go list -m -e -json path@vX.Y`: the newest
// release of that minor, or the reason there is none.
type found struct {
	Path    string
	Version string
	Query   string
	Error   *struct{ Err string }
}

// patch is a requirement with a newer patch release of its own minor.
type patch struct {
	Path     string
	Current  string
	Newest   string
	Indirect bool
}

// unchecked is a requirement whose newest patch could not be learnt.
type unchecked struct {
	Path string
	Err  string
}

// semver is the parts of a module version this tool compares: vMAJOR.MINOR.PATCH,
// whether it carries a pre-release (a pseudo-version does), build
// metadata (+incompatible) dropped.
type semver struct {
	major, minor, patch int
	pre                 bool
}

// parse reads a module version; ok is false for anything else.
func parse(v string) (s semver, ok bool) {
	rest, found := strings.CutPrefix(v, "v")
	if !found {
		return s, false
	}
	rest, _, _ = strings.Cut(rest, "+")
	rest, pre, hasPre := strings.Cut(rest, "-")
	parts := strings.Split(rest, ".")
	if len(parts) != 3 || (hasPre && pre == "") {
		return s, false
	}
	nums := make([]int, 3)
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || (len(p) > 1 && p[0] == '0') {
			return s, false
		}
		nums[i] = n
	}
	return semver{nums[0], nums[1], nums[2], hasPre}, true
}

// minorQuery is the module query for the newest release of v's minor
// ("v1.4" for v1.4.2 and for the pseudo-version v1.4.3-0.2026…).
func minorQuery(v string) (string, bool) {
	s, ok := parse(v)
	if !ok {
		return "", false
	}
	return "v" + strconv.Itoa(s.major) + "." + strconv.Itoa(s.minor), true
}

// newerPatch reports whether candidate is a release of current's
// major.minor that comes after it: a higher patch, or the release a
// pre-release or pseudo-version of the same patch leads to.
func newerPatch(current, candidate string) bool {
	cur, ok1 := parse(current)
	cand, ok2 := parse(candidate)
	if !ok1 || !ok2 || cand.pre || cand.major != cur.major || cand.minor != cur.minor {
		return false
	}
	return cand.patch > cur.patch || (cand.patch == cur.patch && cur.pre)
}

// noMatch is how the go command says a minor has no release at all (a
// module known only by pseudo-versions): an answer, not a failure.
const noMatch = "no matching versions for query"

// compare pairs go.mod's requirements with the answers to their minor
// queries. Requirements whose version is not semver, and minors with no
// release, are neither patches nor unchecked.
func compare(reqs []requirement, answers []found) ([]patch, []unchecked) {
	byPath := make(map[string]found, len(answers))
	for _, a := range answers {
		byPath[a.Path] = a
	}
	var patches []patch
	var failed []unchecked
	for _, r := range reqs {
		if _, ok := minorQuery(r.Version); !ok {
			continue
		}
		a, ok := byPath[r.Path]
		switch {
		case !ok:
			failed = append(failed, unchecked{r.Path, "no answer from go list"})
		case a.Error != nil && strings.Contains(a.Error.Err, noMatch):
		case a.Error != nil:
			failed = append(failed, unchecked{r.Path, a.Error.Err})
		case newerPatch(r.Version, a.Version):
			patches = append(patches, patch{r.Path, r.Version, a.Version, r.Indirect})
		}
	}
	return patches, failed
}
