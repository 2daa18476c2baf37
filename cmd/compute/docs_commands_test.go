package main

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/cmd/compute/cli"
)

// Every command line the documentation gives a reader to type is one the
// binary runs: each `compute …` in a code span, and each line of a sh
// block that starts with compute, names a command of the tree and only
// flags that command has (serve, agent and torture, which parse their own
// flags, against their parsers: checkOwnFlags). webhooks.md and events.md
// sent their readers to `compute bench`, a subcommand removed when the
// benchmark became cmd/compute-bench: `unknown command "bench" for
// "compute"`; benchmarks.md to `compute serve --roles api`, a flag serve
// never had (COMPUTE_ROLES sets its roles): `flag provided but not
// defined: -roles`.
// (TestCLIReferenceNamesEveryCommand checks the other way: docs/cli.md
// names every command.)
func TestDocsNameOnlyCommandsThatExist(t *testing.T) {
	t.Parallel()
	root := cli.Root(program(strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" }))
	// Named on purpose as what does not exist.
	mentionsOfNoCommand := map[string]string{
		"docs/benchmarks.md":  "compute bench", // "It used to be the `compute bench` subcommand, which is gone"
		"docs/reliability.md": "compute chaos", // "rather than a `compute chaos` subcommand"
	}
	var checked int
	for _, file := range docFiles(t) {
		for _, c := range docCommandLines(t, file) {
			if mentionsOfNoCommand[file] == c.text {
				continue
			}
			checked++
			if msg := checkCommandLine(root, c.text); msg != "" {
				t.Errorf("%s:%d: `%s`: %s", file, c.line, c.text, msg)
			}
		}
	}
	require.Greater(t, checked, 50, "the scan finds the docs' command lines")
}

// checkCommandLine says what is wrong with a documented command line, or
// "" when the binary would take it.
func checkCommandLine(root *cobra.Command, text string) string {
	args := strings.Fields(text)[1:] // after "compute"
	if len(args) == 0 {
		return ""
	}
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err.Error()
	}
	if cmd == root && !strings.HasPrefix(args[0], "-") {
		return "no such command"
	}
	if cmd.DisableFlagParsing { // serve, agent, torture: their own flag sets
		return checkOwnFlags(cmd, rest)
	}
	for _, a := range rest {
		if !strings.HasPrefix(a, "--") || a == "--" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		name = strings.TrimRight(name, "]|…,.;:)")
		// cobra adds --help, and the root's --version, when it runs.
		if name == "" || name == "help" || (name == "version" && cmd == root) || strings.ContainsAny(name, "<>[") {
			continue
		}
		if cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil {
			return cmd.CommandPath() + " has no flag --" + name
		}
	}
	return ""
}

// checkOwnFlags says which flag of args a server command that parses its
// own flags does not have: agent's parser is asked about each (with the
// value 0, which every kind of flag takes); serve and torture, whose
// parsers run only with the command, are held to the flags their --help
// lists (`--demo`, `--ops N`), which are their parsers' flags.
func checkOwnFlags(cmd *cobra.Command, args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || a == "--" || a == "-h" || a == "--help" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		name = strings.TrimRight(name, "]|…,.;:)")
		if name == "" || strings.ContainsAny(name, "<>[") {
			continue
		}
		var known bool
		if cmd.Name() == "agent" {
			_, err := agent.ParseFlags([]string{"--" + name + "=0"})
			known = err == nil || !strings.Contains(err.Error(), "flag provided but not defined")
		} else {
			known = regexp.MustCompile(`--` + regexp.QuoteMeta(name) + `\b`).MatchString(cmd.Long)
		}
		if !known {
			return cmd.CommandPath() + " has no flag --" + name
		}
	}
	return ""
}

// docFile is a markdown file a reader has: docs/ and the README.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir("../../docs", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, strings.TrimPrefix(p, "../../"))
		}
		return err
	})
	require.NoError(t, err)
	return files
}

type docCommand struct {
	line int
	text string
}

var (
	codeSpan      = regexp.MustCompile("`((?:\\./bin/|/usr/local/bin/)?compute [^`]+)`")
	commandPrefix = regexp.MustCompile(`^(?:sudo\s+)?(?:\./bin/|/usr/local/bin/)?compute(?:\s|$)`)
)

// docCommandLines returns the compute command lines of a markdown file:
// code spans in its prose, and lines of its sh blocks (comments cut).
func docCommandLines(t *testing.T, file string) []docCommand {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../..", file))
	require.NoError(t, err)
	var out []docCommand
	fence := "" // the open fence's info string; "" outside one
	inFence := false
	for i, line := range strings.Split(string(b), "\n") {
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "```") {
			if inFence {
				inFence = false
			} else {
				inFence, fence = true, strings.TrimPrefix(trim, "```")
			}
			continue
		}
		if inFence {
			if fence != "sh" {
				continue
			}
			code, _, _ := strings.Cut(trim, " #")
			code = strings.TrimSuffix(strings.TrimSpace(code), "\\")
			if commandPrefix.MatchString(code) {
				out = append(out, docCommand{i + 1, strings.TrimPrefix(strings.TrimSpace(code), "sudo ")})
			}
			continue
		}
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			out = append(out, docCommand{i + 1, m[1]})
		}
	}
	return out
}
