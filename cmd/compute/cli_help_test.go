package main

import (
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/cmd/compute/cli"
)

// commandPaths lists every command of the tree ("reservations create", …),
// the root as "".
func commandPaths() []string {
	var out []string
	var walk func(cmd *cobra.Command, prefix string)
	walk = func(cmd *cobra.Command, prefix string) {
		out = append(out, strings.TrimSpace(prefix))
		for _, sub := range cmd.Commands() {
			walk(sub, prefix+" "+sub.Name())
		}
	}
	walk(cli.Root(program(strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" })), "")
	return out
}

// Every command's --help (and -h, and `help <command>`) exits 0 and prints
// its help, and touches no database: the binary runs with a database URL
// that nothing answers, so a command that connected would fail; a server
// command that started anyway would not return before the test's deadline.
// --version prints the version, the commit and the Go toolchain.
func TestEveryHelpExitsZeroWithoutADatabase(t *testing.T) {
	t.Parallel()
	dir := scratchDir(t)
	bin := buildCompute(t, dir)
	env := baseEnv(dir, "DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1",
		"COMPUTE_PG_DIR=/nonexistent/pg")
	paths := commandPaths()
	require.Contains(t, paths, "check")
	require.Contains(t, paths, "reservations create")
	require.Contains(t, paths, "events tail")
	for _, path := range paths {
		args := strings.Fields(path)
		for _, help := range []string{"--help", "-h"} {
			out, errOut, code := runCLI(t, dir, env, "", append(append([]string{bin}, args...), help)...)
			require.Equal(t, 0, code, "compute %s %s: stderr %s", path, help, errOut)
			require.Contains(t, out, "Usage:", "compute %s %s", path, help)
			require.NotContains(t, errOut, "postgres", "compute %s %s", path, help)
		}
		if path != "" {
			out, errOut, code := runCLI(t, dir, env, "", append([]string{bin, "help"}, args...)...)
			require.Equal(t, 0, code, "compute help %s: %s", path, errOut)
			require.Contains(t, out, "Usage:")
		}
	}

	// The agent's own flags come with its help, on stdout.
	out, _, code := runCLI(t, dir, env, "", bin, "agent", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "-fake-gpus")

	out, _, code = runCLI(t, dir, env, "", bin, "--version")
	require.Equal(t, 0, code)
	require.Regexp(t, versionOutput, out)

	// Shell completion is there.
	out, _, code = runCLI(t, dir, env, "", bin, "completion", "bash")
	require.Equal(t, 0, code)
	require.Contains(t, out, "__start_compute")
	out, _, code = runCLI(t, dir, env, "", bin, "__complete", "reservations", "list", "--state", "")
	require.Equal(t, 0, code)
	require.True(t, slices.Contains(strings.Split(out, "\n"), "booked"), out)
}

// docs/cli.md, the reference of the command line, names every command.
func TestCLIReferenceNamesEveryCommand(t *testing.T) {
	t.Parallel()
	ref, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	var missing []string
	for _, path := range commandPaths() {
		if path != "" && !strings.Contains(string(ref), "`compute "+path) {
			missing = append(missing, "compute "+path)
		}
	}
	require.Empty(t, missing, "docs/cli.md does not name these commands")
}

// A server command given a flag it does not know, or a value that does
// not parse, exits 2 like any bad input (docs/cli.md, exit codes), before
// it touches a database: `compute torture --bogus`, `serve --bogus` and
// `agent --bogus` exited 1, as a run that failed, while `migrate --bogus`
// and `check --bogus` exited 2.
func TestServerCommandsExitTwoOnBadFlags(t *testing.T) {
	t.Parallel()
	dir := scratchDir(t)
	bin := buildCompute(t, dir)
	env := baseEnv(dir, "DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1",
		"COMPUTE_PG_DIR=/nonexistent/pg")
	for _, args := range [][]string{
		{"serve", "--bogus"}, {"agent", "--bogus"}, {"agent", "--vcpu", "x"}, {"agent"},
		{"torture", "--bogus"}, {"torture", "--ops", "x"}, {"migrate", "--bogus"}, {"check", "--bogus"},
	} {
		_, errOut, code := runCLI(t, dir, env, "", append([]string{bin}, args...)...)
		require.Equal(t, 2, code, "compute %s: stderr %s", strings.Join(args, " "), errOut)
		require.NotContains(t, errOut, "127.0.0.1:1", "compute %s: no database asked", strings.Join(args, " "))
	}
	// A torture run too short to pass its own judgement is refused before
	// it runs, saying why: --ops 200 ran, found 0 violations and failed on
	// "the replan cap was never reached" and "no call observed a preemption".
	_, errOut, code := runCLI(t, dir, env, "", bin, "torture", "--ops", "200")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "fewer than 1000 operations cannot pass")
}

// The help of a command that parses its own flags (agent, serve, torture)
// lists only what its parser reads: `compute agent -h` listed the client
// commands' --context and --output under "Global Flags", which the
// agent's parser refuses as unknown, and printed the agent's own flags on
// stderr, after the help on stdout. Now its flags are in the help, on
// stdout, and `compute help agent` shows them too.
func TestPassThroughHelpListsOnlyWhatItReads(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"agent", "--help"}, {"agent", "-h"}, {"help", "agent"}, {"agent", "--node", "n1", "-help"}} {
		var out, errOut strings.Builder
		code := cli.Run(context.Background(), program(strings.NewReader(""), &out, &errOut, func(string) string { return "" }), args)
		require.Equal(t, 0, code, "%v: %s", args, errOut.String())
		require.Empty(t, errOut.String(), args)
		help := out.String()
		require.Contains(t, help, "Usage:\n  compute agent --node NODE_ID [flags]\n", args)
		require.Contains(t, help, "COMPUTE_JOIN_TOKEN", args)
		var listed []string
		for _, line := range strings.Split(help, "\n") {
			if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(line, "  -") {
				listed = append(listed, strings.TrimLeft(f[0], "-"))
			}
		}
		var reads []string
		var b strings.Builder
		agent.PrintFlags(&b)
		for _, line := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(line, "  -") {
				reads = append(reads, strings.TrimLeft(strings.Fields(line)[0], "-"))
			}
		}
		require.Contains(t, reads, "fake-gpus")
		require.Equal(t, reads, listed, "%v: the flags listed are the agent's, and only those", args)
		for _, global := range []string{"--context", "--output", "Global Flags"} {
			require.NotContains(t, help, global, args)
		}
	}
	for _, name := range []string{"serve", "torture"} {
		var out, errOut strings.Builder
		code := cli.Run(context.Background(), program(strings.NewReader(""), &out, &errOut, func(string) string { return "" }), []string{name, "--help"})
		require.Equal(t, 0, code, errOut.String())
		require.Contains(t, out.String(), "Usage:\n  compute "+name)
		for _, global := range []string{"--context", "--output", "Global Flags"} {
			require.NotContains(t, out.String(), global, name)
		}
	}
}

// The server commands cobra parses list their own flags only, and refuse
// the client commands' --context and --output before they load any
// configuration or open a database, as bad input.
func TestCobraServerCommandsRefuseClientFlags(t *testing.T) {
	t.Parallel()
	run := func(args ...string) (int, string, string) {
		var out, errOut strings.Builder
		code := cli.Run(context.Background(), program(strings.NewReader(""), &out, &errOut, func(string) string { return "" }), args)
		return code, out.String(), errOut.String()
	}
	for _, c := range []struct {
		args        []string
		name, usage string
	}{
		{[]string{"migrate"}, "migrate", "compute migrate [flags]"},
		{[]string{"check"}, "check", "compute check [flags]"},
		{[]string{"projections", "rebuild", "fleet"}, "projections rebuild", "compute projections rebuild NAME [flags]"},
	} {
		code, help, errOut := run(append(slices.Clone(c.args), "--help")...)
		require.Equal(t, 0, code, "%v: %s", c.args, errOut)
		require.Contains(t, help, "Usage:\n  "+c.usage+"\n", c.args)
		for _, global := range []string{"--context", "--output", "Global Flags"} {
			require.NotContains(t, help, global, c.args)
		}
		for _, flag := range []string{"--context=prod", "-o=json", "--output=yaml"} {
			code, out, errOut := run(append(slices.Clone(c.args), flag)...)
			require.Equal(t, 2, code, "%v %s: %s", c.args, flag, errOut)
			require.Empty(t, out)
			require.Contains(t, errOut, "compute: "+c.name+" does not read --", "%v %s", c.args, flag)
		}
	}
}
