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
