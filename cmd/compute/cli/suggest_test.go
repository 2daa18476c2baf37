package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A mistyped command or flag is bad input (exit 2) that names what was
// probably meant; `compute help` of a mistyped command too, rather than
// printing the parent's help and exiting 0 as if it had found it.
func TestTyposNameWhatWasMeant(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"reservaton", "list"}, `unknown command "reservaton" for "compute"; did you mean reservations?`},
		{[]string{"rsv", "lst"}, `unknown command "lst" for "compute reservations"; did you mean get or list?`},
		{[]string{"nodes", "cordn", "n1"}, "did you mean cordon?"},
		{[]string{"context", "lst"}, "did you mean list or use?"},
		{[]string{"reservations", "list", "--stat", "active"}, "unknown flag: --stat; did you mean --state?"},
		{[]string{"tokens", "create", "--rol", "member"}, "did you mean --role?"},
		{[]string{"help", "reservaton"}, `unknown command "reservaton" for "compute"; did you mean reservations?`},
		{[]string{"help", "reservations", "lst"}, `unknown command "lst" for "compute reservations"`},
		{[]string{"zzzzzz"}, `unknown command "zzzzzz" for "compute"`},
		{[]string{"reservations", "create", "--gpu", "2"}, "unknown flag: --gpu; did you mean --gpu-model, --gpus or --vcpu?"},
		{[]string{"completion", "bsh"}, `unknown command "bsh" for "compute completion"; did you mean bash`},
		// --help after a mistyped command is no help for it: the
		// parent's help, exit 0, would read as if the command existed.
		{[]string{"nodes", "cordn", "--help"}, `unknown command "cordn" for "compute nodes"; did you mean cordon?`},
		{[]string{"rsv", "lst", "-h"}, `unknown command "lst" for "compute reservations"; did you mean get or list?`},
		{[]string{"reservaton", "--help"}, `unknown command "reservaton" for "compute"; did you mean reservations?`},
		{[]string{"--help", "zzzzzz"}, `unknown command "zzzzzz" for "compute"`},
	} {
		out, errOut, code := newInvocation(t).run(c.args...)
		line := strings.Join(c.args, " ")
		require.Equal(t, exitUsage, code, "compute %s: %s", line, errOut)
		require.Empty(t, out, "compute %s", line)
		require.Contains(t, errOut, c.want, "compute %s", line)
	}
	_, errOut, _ := newInvocation(t).run("zzzzzz")
	require.NotContains(t, errOut, "did you mean", "nothing is close")

	out, _, code := newInvocation(t).run("help", "reservations", "list")
	require.Equal(t, 0, code)
	require.Contains(t, out, "compute reservations list [flags]")

	// A command that exists still prints its help with --help, its
	// arguments or not.
	for _, args := range [][]string{{"nodes", "--help"}, {"nodes", "cordon", "n1", "--help"}, {"--help"}, {"reservations", "-h"}} {
		out, errOut, code := newInvocation(t).run(args...)
		require.Equal(t, 0, code, "compute %s: %s", strings.Join(args, " "), errOut)
		require.Contains(t, out, "Usage:", "compute %s", strings.Join(args, " "))
	}
}
