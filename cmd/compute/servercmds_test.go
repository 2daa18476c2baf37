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
