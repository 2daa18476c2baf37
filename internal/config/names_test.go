package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// unsetCompute unsets every COMPUTE_ variable for the rest of the test, so
// that what Load reads is what the test sets.
func unsetCompute(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, Prefix+"_") {
			t.Setenv(name, "") // restored after the test
			require.NoError(t, os.Unsetenv(name))
		}
	}
}

// Settings are read only under their COMPUTE_ names (docs/configuration.md):
// a bare ADDR, ROLES or WEBHOOK_ALLOW_PRIVATE that some other program's
// environment sets (the examples' receivers take ADDR) changes nothing.
// DATABASE_URL and the OpenTelemetry endpoints are the exceptions, under
// their standard names, and their COMPUTE_ names win.
func TestOnlyTheStandardNamesAreReadWithoutThePrefix(t *testing.T) {
	unsetCompute(t)
	for name, v := range map[string]string{"ADDR": "127.0.0.1:9000", "GATEWAY_ADDR": "127.0.0.1:9001",
		"ROLES": "api", "LOG_LEVEL": "debug", "PG_DIR": "/elsewhere", "WEBHOOK_ALLOW_PRIVATE": "true",
		"RATE_LIMIT": "0", "MAX_CONNS": "1"} {
		t.Setenv(name, v)
	}
	t.Setenv("DATABASE_URL", "postgres://standard/db")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, ":8080", c.Addr)
	require.Equal(t, ":8081", c.GatewayAddr)
	require.Equal(t, []string{"api", "worker", "dispatcher", "gateway"}, c.Roles)
	require.Equal(t, "info", c.LogLevel)
	require.Equal(t, ".compute/pg", c.PGDir)
	require.False(t, c.WebhookAllowPrivate)
	require.Equal(t, float64(100), c.RateLimit)
	require.Equal(t, int32(6), c.MaxConns)
	require.Equal(t, "postgres://standard/db", c.DatabaseURL)
	require.Equal(t, "http://collector:4318", c.OTLPEndpoint)

	t.Setenv("COMPUTE_ADDR", "127.0.0.1:8088")
	t.Setenv("COMPUTE_DATABASE_URL", "postgres://prefixed/db")
	t.Setenv("COMPUTE_OTEL_EXPORTER_OTLP_ENDPOINT", "")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8088", c.Addr)
	require.Equal(t, "postgres://prefixed/db", c.DatabaseURL)
	require.Empty(t, c.OTLPEndpoint, "a COMPUTE_ name set empty wins over the standard one")
}

// docsTableRow is a row of docs/configuration.md's settings table: the
// variables of its first cell, and the first code span of its second (the
// default), or the cell itself without one.
var docsTableRow = regexp.MustCompile("(?m)^\\| (`[A-Z][A-Z0-9_]*`(?: / `[A-Z][A-Z0-9_]*`)*) \\| ([^|]*) \\|")

// The settings table of docs/configuration.md and Config name the same
// variables with the same defaults: every field's variable is documented,
// every COMPUTE_ variable of the table is a field (the agent's join token
// is in a table of its own), and a documented default is the tag's.
func TestConfigurationDocMatchesConfig(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	require.NoError(t, err)
	documented := map[string]string{} // variable → documented default
	for _, m := range docsTableRow.FindAllStringSubmatch(string(doc), -1) {
		def := strings.TrimSpace(m[2])
		if code := regexp.MustCompile("^`([^`]*)`").FindStringSubmatch(def); code != nil {
			def = code[1]
		}
		for _, name := range regexp.MustCompile("`([A-Z0-9_]+)`").FindAllStringSubmatch(m[1], -1) {
			documented[name[1]] = def
		}
	}
	// Defaults the table words instead of giving the tag's empty value.
	worded := map[string]string{"COMPUTE_GATEWAY_ID": "host name", "COMPUTE_LISTEN_URL": "the database URL"}

	typ := reflect.TypeOf(Config{})
	inCode := map[string]bool{}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name := f.Tag.Get("envconfig")
		require.True(t, strings.HasPrefix(name, Prefix+"_"), "Config.%s: tag %q", f.Name, name)
		inCode[name] = true
		got, ok := documented[name]
		if !ok {
			t.Errorf("%s (Config.%s) is not in docs/configuration.md's table", name, f.Name)
			continue
		}
		want, hasDefault := f.Tag.Lookup("default")
		switch {
		case worded[name] != "":
			want = worded[name]
		case !hasDefault:
			want = "unset"
		}
		if got != want {
			t.Errorf("docs/configuration.md gives %s the default %q, Config.%s %q", name, got, f.Name, want)
		}
	}
	for name := range documented {
		if strings.HasPrefix(name, Prefix+"_") && !inCode[name] {
			t.Errorf("docs/configuration.md documents %s, which Config does not read", name)
		}
	}
	require.Greater(t, len(inCode), 60, "Config's fields were read")
}
