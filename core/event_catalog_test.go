package core_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// eventConstants parses the non-test Go files of package core and returns
// the values of its string constants named Event*: the event types core
// declares, whether or not someone remembered the catalog.
func eventConstants(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var out []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Event") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					require.True(t, ok && lit.Kind == token.STRING, "%s: %s must be a string literal", path, name.Name)
					v, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					out = append(out, v)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// Every Event* constant of core is in the catalog once, and the catalog
// names nothing else; each entry is complete, with a payload struct (so no
// writer builds its data as a map and no reader guesses its fields;
// httpapi's TestEventSchemaPayloadStructs checks each against
// docs/openapi.yaml).
func TestEventCatalog(t *testing.T) {
	t.Parallel()
	types := core.EventTypes()
	sorted := slices.Sorted(slices.Values(types))
	require.Equal(t, len(sorted), len(slices.Compact(slices.Clone(sorted))), "an event type is in the catalog twice")
	require.Equal(t, eventConstants(t), sorted, "core's Event* constants vs core.EventCatalog (core/event_catalog.go)")

	for _, e := range core.EventCatalog() {
		require.NotEmpty(t, e.Summary, "%s has no summary", e.Type)
		// The shape the event filters (GET /v1/events?types=, a webhook's
		// eventTypes) accept: a hyphen would make the type unfilterable.
		require.Regexp(t, `^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`, e.Type, "lower-case words joined by dots")
		require.NotNil(t, e.Payload, "%s has no Payload: give its data a type in core", e.Type)
		require.Equal(t, reflect.Struct, e.Payload.Kind(), "%s: Payload must be a struct type", e.Type)
		got, ok := core.LookupEvent(e.Type)
		require.True(t, ok, e.Type)
		require.Equal(t, e.Type, got.Type)
		require.Equal(t, e.TenantScoped, got.TenantScoped)
	}
	_, ok := core.LookupEvent("no.such_event")
	require.False(t, ok)

	// The other lists of event types name catalog types only.
	for _, typ := range core.EligibilityEventTypes {
		require.Contains(t, types, typ)
	}
	for _, typ := range core.InstanceEvents() {
		spec, ok := core.LookupEvent(typ)
		require.True(t, ok, typ)
		require.True(t, spec.TenantScoped, typ)
	}
}
