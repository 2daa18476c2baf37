package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/cmd/compute/cli"
)

// A server command's bad arguments are bad input like a client command's
// (package cli's TestBadInputNamesTheFlag): exit 2 (docs/cli.md), the
// argument named, nothing on stdout, and no database opened, since the
// arguments are refused before the command runs.
func TestServerCommandBadInputNamesTheArgument(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), program(strings.NewReader(""), &out, &errOut, func(string) string { return "" }),
		[]string{"check", "extra"})
	require.Equal(t, 2, code, "compute check extra: %s", errOut.String())
	require.Empty(t, out.String(), "compute check extra")
	require.Contains(t, errOut.String(), `"extra"`, "compute check extra")
	require.True(t, strings.HasPrefix(errOut.String(), "compute: "), errOut.String())
}

// `compute projections rebuild NAME` with a NAME that is no projection is
// bad input (exit 2) named before any database is opened: it used to open
// the database first and exit 1, and beside a running serve on the private
// PostgreSQL it said only that the database was in use.
func TestProjectionsRebuildRefusesAnUnknownNameBeforeTheDatabase(t *testing.T) {
	// Nothing answers there: a command that opened it would fail with 1.
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), program(strings.NewReader(""), &out, &errOut, func(string) string { return "" }),
		[]string{"projections", "rebuild", "reservation"})
	require.Equal(t, 2, code, errOut.String())
	require.Empty(t, out.String())
	require.Contains(t, errOut.String(), `compute: NAME: no projection named "reservation" (known: reservations, fleet, device-holders, usage-windows)`)
	require.NotContains(t, errOut.String(), "connect")
}

// `compute check`, `compute torture` and `compute projections rebuild`
// print a report for a person on stdout, so their failures read as every other command's do: one
// `compute: <message>` on stderr (with the flag meant and the --help hint
// for a bad flag, as docs/cli.md promises of a mistyped one),
// exit 1, or 2 for bad input. They used to log a JSON line instead (and
// torture's flag parser its whole flag list before it), as serve does.
func TestCheckAndTortureFailLikeTheOtherCommands(t *testing.T) {
	// Nothing answers there: the commands that connect fail at once.
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	for _, tc := range []struct {
		args []string
		code int
		want string // the start of stderr
		hint bool   // the --help hint follows
	}{
		{[]string{"check"}, 1, "compute: migration version: failed to connect to ", false},
		{[]string{"torture"}, 1, "compute: connect to the server: failed to connect to ", false},
		{[]string{"torture", "--bogus"}, 2, "compute: unknown flag: --bogus\n", true},
		{[]string{"torture", "--opss", "5000"}, 2, "compute: unknown flag: --opss; did you mean --ops?\n", true},
		{[]string{"torture", "-seeds=2"}, 2, "compute: unknown flag: --seeds; did you mean --seed?\n", true},
		{[]string{"torture", "--ops", "x"}, 2, "compute: invalid value \"x\" for flag -ops: parse error\n", true},
		{[]string{"torture", "--ops", "5"}, 2, "compute: --ops 5: a run of fewer than 1000 operations cannot pass", true},
		{[]string{"projections", "rebuild", "fleet"}, 1, "compute: apply migrations: failed to initialize: failed to connect to ", false},
	} {
		var out, errOut bytes.Buffer
		code := cli.Run(context.Background(), program(strings.NewReader(""), &out, &errOut, func(string) string { return "" }), tc.args)
		require.Equal(t, tc.code, code, "%v: %s", tc.args, errOut.String())
		require.Empty(t, out.String(), tc.args)
		require.True(t, strings.HasPrefix(errOut.String(), tc.want), "%v: %s", tc.args, errOut.String())
		require.Equal(t, 1, strings.Count(errOut.String(), "compute: "), "%v: %s", tc.args, errOut.String())
		require.Equal(t, tc.hint, strings.HasSuffix(errOut.String(), "\nRun 'compute torture --help' for usage.\n"),
			"%v: %s", tc.args, errOut.String())
	}
}
