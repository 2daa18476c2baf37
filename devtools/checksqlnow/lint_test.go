package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The fixtures below plant the very calls the lint forbids. They live in
// string literals of this file, so each such source line carries the allow
// marker in a trailing comment: the marker is outside the literal, so it
// exempts this file's line from the repository-wide check without ending up
// in the fixture that gets written to disk and checked.

// The canonical names Check reports, spelled once here so the tables below
// need no markers of their own.
const (
	mNow                  = "now()"                   // check-sql-now: allow
	mCurrentTimestamp     = "CURRENT_TIMESTAMP"       // check-sql-now: allow
	mLocalTimestamp       = "LOCALTIMESTAMP"          // check-sql-now: allow
	mClockTimestamp       = "clock_timestamp()"       // check-sql-now: allow
	mStatementTimestamp   = "statement_timestamp()"   // check-sql-now: allow
	mTransactionTimestamp = "transaction_timestamp()" // check-sql-now: allow
)

// writeTree writes files (slash path -> content) under a fresh temp dir and
// returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	return root
}

// at is a finding without its Text, which the table cases do not pin.
type at struct {
	Path  string
	Line  int
	Match string
}

func positions(fs []Finding) []at {
	out := []at{}
	for _, f := range fs {
		out = append(out, at{f.Path, f.Line, f.Match})
	}
	return out
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []at
	}{
		{
			name: "planted call in a SQL file, with its line",
			files: map[string]string{"sql/queries/jobs.sql": "-- name: Due :many\n" +
				"SELECT id\n" +
				"FROM jobs WHERE run_at <= now();\n"}, // check-sql-now: allow
			want: []at{{"sql/queries/jobs.sql", 3, mNow}},
		},
		{
			name: "call on the third line of a Go raw string",
			files: map[string]string{"store/q.go": "package store\n" +
				"\n" +
				"const due = `SELECT id\n" +
				"FROM jobs\n" +
				"WHERE run_at <= now()`\n"}, // check-sql-now: allow
			want: []at{{"store/q.go", 5, mNow}},
		},
		{
			name: "raw string with CRLF line endings keeps line numbers",
			files: map[string]string{"store/q.go": "package store\r\n" +
				"\r\n" +
				"const due = `SELECT id\r\n" +
				"FROM jobs\r\n" +
				"WHERE run_at <= NOW()`\r\n"}, // check-sql-now: allow
			want: []at{{"store/q.go", 5, mNow}},
		},
		{
			name: "call in an interpreted Go string",
			files: map[string]string{"store/q.go": "package store\n" +
				"\n" +
				"var q = \"SELECT \\\"x\\\", now() FROM t\"\n"}, // check-sql-now: allow
			want: []at{{"store/q.go", 3, mNow}},
		},
		{
			name: "compute_now() and look-alikes are fine",
			files: map[string]string{
				"sql/queries/ok.sql": "SELECT compute_now();\n" +
					"SELECT COMPUTE_NOW ( );\n" +
					"SELECT snow(), now_utc(), my_current_timestamp_x, localtimestamps;\n" +
					"SELECT now FROM t; -- a column called now\n" +
					"SELECT x_clock_timestamp(), mystatement_timestamp();\n",
				"store/q.go": "package store\n" +
					"\n" +
					"const q = `UPDATE leases SET expires_at = compute_now() + interval '30 seconds'`\n",
			},
			want: []at{},
		},
		{
			name: "every forbidden spelling, any case, space before the paren",
			files: map[string]string{"sql/queries/all.sql": "SELECT CURRENT_TIMESTAMP;\n" + // check-sql-now: allow
				"SELECT current_timestamp(3);\n" + // check-sql-now: allow
				"SELECT localtimestamp;\n" + // check-sql-now: allow
				"SELECT clock_timestamp();\n" + // check-sql-now: allow
				"SELECT Statement_Timestamp();\n" + // check-sql-now: allow
				"SELECT transaction_timestamp ();\n" + // check-sql-now: allow
				"SELECT NOW\t();\n" + // check-sql-now: allow
				"SELECT pg_catalog.now();\n" + // check-sql-now: allow
				"WHERE a < (now()) AND b < LocalTimestamp;\n"}, // check-sql-now: allow
			want: []at{
				{"sql/queries/all.sql", 1, mCurrentTimestamp},
				{"sql/queries/all.sql", 2, mCurrentTimestamp},
				{"sql/queries/all.sql", 3, mLocalTimestamp},
				{"sql/queries/all.sql", 4, mClockTimestamp},
				{"sql/queries/all.sql", 5, mStatementTimestamp},
				{"sql/queries/all.sql", 6, mTransactionTimestamp},
				{"sql/queries/all.sql", 7, mNow},
				{"sql/queries/all.sql", 8, mNow},
				{"sql/queries/all.sql", 9, mNow},
				{"sql/queries/all.sql", 9, mLocalTimestamp},
			},
		},
		{
			name:  "one finding per spelling per line",
			files: map[string]string{"a.sql": "SELECT now(), now(), CURRENT_TIMESTAMP;\n"}, // check-sql-now: allow
			want:  []at{{"a.sql", 1, mNow}, {"a.sql", 1, mCurrentTimestamp}},
		},
		{
			name: "the clock migration is exempt, and only at its exact path",
			files: map[string]string{
				"sql/migrations/0001_clock.sql":          "CREATE FUNCTION compute_now() RETURNS timestamptz AS $$ SELECT now() $$;\n", // check-sql-now: allow
				"sql/migrations/0002_jobs.sql":           "ALTER TABLE jobs ALTER created_at SET DEFAULT now();\n",                     // check-sql-now: allow
				"vendored/sql/migrations/0001_clock.sql": "SELECT now();\n",                                                            // check-sql-now: allow
			},
			want: []at{
				{"sql/migrations/0002_jobs.sql", 1, mNow},
				{"vendored/sql/migrations/0001_clock.sql", 1, mNow},
			},
		},
		{
			name: "allow marker on a SQL line exempts only that line",
			files: map[string]string{"a.sql": "SELECT now(); -- check-sql-now: allow\n" + // check-sql-now: allow
				"SELECT now();\n"}, // check-sql-now: allow
			want: []at{{"a.sql", 2, mNow}},
		},
		{
			name: "allow marker in a comment on a Go line exempts only that line",
			files: map[string]string{"store/q.go": "package store\n" +
				"\n" +
				"const a = \"SELECT now()\" // check-sql-now: allow\n" + // check-sql-now: allow
				"const b = `SELECT now(),\n" + // check-sql-now: allow
				"  CURRENT_TIMESTAMP` // check-sql-now: allow\n"}, // check-sql-now: allow
			want: []at{{"store/q.go", 4, mNow}},
		},
		{
			name: "Go comments and code are not strings",
			files: map[string]string{"store/clock.go": "package store\n" +
				"\n" +
				"import \"time\"\n" +
				"\n" +
				"// Never call now() or CURRENT_TIMESTAMP in SQL.\n" + // check-sql-now: allow
				"/* clock_timestamp() is also out:\n" + // check-sql-now: allow
				"   SELECT now() */\n" + // check-sql-now: allow
				"func now() time.Time { return time.Now() }\n"}, // check-sql-now: allow
			want: []at{},
		},
		{
			name: "skipped directories and other file types",
			files: map[string]string{
				"testdata/bad.sql":              "SELECT now();\n",                             // check-sql-now: allow
				"pkg/testdata/bad.go":           "package bad\n\nconst q = \"SELECT now()\"\n", // check-sql-now: allow
				"vendor/x/q.go":                 "package x\n\nconst q = \"SELECT now()\"\n",   // check-sql-now: allow
				"node_modules/x/q.sql":          "SELECT now();\n",                             // check-sql-now: allow
				".git/hooks/q.sql":              "SELECT now();\n",                             // check-sql-now: allow
				".compute/state/q.sql":          "SELECT now();\n",                             // check-sql-now: allow
				"docs/README.md":                "Never write now() in SQL.\n",                 // check-sql-now: allow
				"web/app.ts":                    "const q = `SELECT now()`\n",                  // check-sql-now: allow
				"pkg/testdatax/not_skipped.sql": "SELECT now();\n",                             // check-sql-now: allow
			},
			want: []at{{"pkg/testdatax/not_skipped.sql", 1, mNow}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeTree(t, tt.files)
			got, err := Check(root)
			require.NoError(t, err)
			require.Equal(t, tt.want, positions(got))
		})
	}
}

func TestCheckReportsTrimmedSourceLine(t *testing.T) {
	root := writeTree(t, map[string]string{"store/q.go": "package store\n" +
		"\n" +
		"const q = `SELECT id\n" +
		"\t\tWHERE at < now()   `  // the whole source line is reported\n"}) // check-sql-now: allow
	got, err := Check(root)
	require.NoError(t, err)
	require.Equal(t, []Finding{{
		Path:  "store/q.go",
		Line:  4,
		Match: "now()",                                                      // check-sql-now: allow
		Text:  "WHERE at < now()   `  // the whole source line is reported", // check-sql-now: allow
	}}, got)
}

func TestCheckMissingRoot(t *testing.T) {
	_, err := Check(filepath.Join(t.TempDir(), "absent"))
	require.Error(t, err)
}

func TestRun(t *testing.T) {
	root := writeTree(t, map[string]string{"sql/queries/jobs.sql": "SELECT 1;\n  SELECT now();  \n"}) // check-sql-now: allow

	var stderr bytes.Buffer
	require.Equal(t, 1, run([]string{root}, &stderr))
	want := filepath.Join(root, "sql", "queries", "jobs.sql") +
		":2: forbidden clock \"now()\" — use compute_now(): SELECT now();\n" // check-sql-now: allow
	require.Equal(t, want, stderr.String())

	stderr.Reset()
	require.Equal(t, 0, run([]string{writeTree(t, map[string]string{"a.sql": "SELECT compute_now();\n"})}, &stderr))
	require.Empty(t, stderr.String())

	stderr.Reset()
	require.Equal(t, 2, run([]string{"a", "b"}, &stderr))
	require.True(t, strings.HasPrefix(stderr.String(), "usage:"))

	stderr.Reset()
	require.Equal(t, 2, run([]string{filepath.Join(root, "absent")}, &stderr))
	require.NotEmpty(t, stderr.String())
}

// TestRepositoryIsClean is the lint itself, run as part of go test: the
// whole repository must read the clock only through compute_now().
func TestRepositoryIsClean(t *testing.T) {
	root := filepath.Join("..", "..")
	_, err := os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "expected the repository root three levels up")

	findings, err := Check(root)
	require.NoError(t, err)
	require.Empty(t, findings, "SQL must read the clock through compute_now(); see devtools/checksqlnow")
}
