package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewerPatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		current, candidate string
		want               bool
	}{
		{"v1.4.2", "v1.4.3", true},
		{"v1.4.2", "v1.4.10", true},
		{"v1.4.2", "v1.4.2", false},
		{"v1.4.10", "v1.4.9", false},
		{"v1.4.2", "v1.5.0", false}, // a newer minor is not a patch
		{"v1.4.2", "v2.4.3", false},
		{"v1.4.2", "v1.4.3-rc.1", false},                         // a pre-release is not offered
		{"v1.4.3-0.20261106145633-d407941a339a", "v1.4.3", true}, // the release after a pseudo-version
		{"v1.4.3-0.20261106145633-d407941a339a", "v1.4.2", false},
		{"v0.0.0-20250409022910-10ac41983c07", "v0.0.1", true},
		{"v2.0.0+incompatible", "v2.0.1+incompatible", true},
		{"v1.4", "v1.4.3", false},
		{"v1.04.2", "v1.4.3", false},
	}
	for _, c := range cases {
		require.Equal(t, c.want, newerPatch(c.current, c.candidate), "newerPatch(%s, %s)", c.current, c.candidate)
	}
}

func TestMinorQuery(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{
		"v1.4.2": "v1.4", "v0.62.0": "v0.62", "v0.0.0-20250409022910-10ac41983c07": "v0.0", "v2.1.0+incompatible": "v2.1",
	} {
		got, ok := minorQuery(v)
		require.True(t, ok, v)
		require.Equal(t, want, got, v)
	}
	_, ok := minorQuery("master")
	require.False(t, ok)
}

// A go list answer per requirement: a newer patch is listed (with its
// indirect mark), an equal one is not, a minor without releases is neither
// listed nor a failure, and the proxy's refusal is named.
func TestCompare(t *testing.T) {
	t.Parallel()
	reqs := []requirement{
		{Path: "a.example/x", Version: "v1.2.3"},
		{Path: "b.example/y", Version: "v0.62.0", Indirect: true},
		{Path: "c.example/z", Version: "v0.9.0"},
		{Path: "d.example/pseudo", Version: "v0.0.0-20160624110644-59b7046e48ad"},
		{Path: "e.example/denied", Version: "v1.2.2"},
		{Path: "f.example/lost", Version: "v3.0.0"},
	}
	answers := []found{
		{Path: "a.example/x", Version: "v1.2.5", Query: "v1.2"},
		{Path: "b.example/y", Version: "v0.62.1", Query: "v0.62"},
		{Path: "c.example/z", Version: "v0.9.0", Query: "v0.9"},
		{Path: "d.example/pseudo", Version: "v0.0", Error: &struct{ Err string }{`module d.example/pseudo: no matching versions for query "v0.0"`}},
		{Path: "e.example/denied", Version: "v1.2", Error: &struct{ Err string }{"reading https://proxy.golang.org/e.example/denied/@v/list: 403 Forbidden"}},
	}
	patches, failed := compare(reqs, answers)
	require.Equal(t, []patch{
		{Path: "a.example/x", Current: "v1.2.3", Newest: "v1.2.5"},
		{Path: "b.example/y", Current: "v0.62.0", Newest: "v0.62.1", Indirect: true},
	}, patches)
	require.Equal(t, []unchecked{
		{Path: "e.example/denied", Err: "reading https://proxy.golang.org/e.example/denied/@v/list: 403 Forbidden"},
		{Path: "f.example/lost", Err: "no answer from go list"},
	}, failed)
}
