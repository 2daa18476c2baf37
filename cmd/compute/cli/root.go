// Package cli is the command line of the compute binary: the command tree
// (client and server commands under one root, one --help, one completion),
// the client commands that talk to a running server over its HTTP API
// through package client, the contexts file, the output formats and the
// exit codes of docs/cli.md. It imports of this module only client and
// core (devtools/layers holds it to that), so that a client command
// cannot reach the database: the server commands, and the one client path
// that writes to the database (tokens create --database), come from
// package main through Program.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
)

// Program is what the command line takes from the process that runs it:
// where it reads and writes, the environment it sees, what the linker
// stamped into the binary, and the parts that need the server's packages,
// which package main builds.
type Program struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string

	// Version and Commit are the release version and the commit the binary
	// was built from, as the release build links them into package main;
	// empty, --version and the User-Agent fall back to the build info.
	Version, Commit string

	// ServerCommands builds the commands that run the control plane
	// (serve, agent, migrate, …), listed under their own heading of
	// --help. It is called once per command tree: a cobra command keeps
	// the flags it parsed. Their bodies report a bad configuration with
	// Usage and a failure they logged themselves with ErrReported.
	ServerCommands func() []*cobra.Command

	// CreateTokenInDatabase is `tokens create --database`: it issues the
	// token by writing to the database itself, not through the API. Nil,
	// --database is refused as bad input.
	CreateTokenInDatabase func(ctx context.Context, req client.CreateTokenRequest) (client.TokenCreated, error)
}

// Run executes the command line args and returns the process's exit code,
// having written the error, if any, to stderr.
func Run(ctx context.Context, p Program, args []string) int {
	return run(ctx, newCLI(p), args)
}

// Root builds the command tree of p without running it, for walking it:
// the tests that hold every command's --help and docs/cli.md to the tree.
func Root(p Program) *cobra.Command {
	return newCLI(p).newRoot()
}

// cli is one invocation of the command line: where it reads and writes, the
// environment it sees, and the global flags. Run builds it from the
// Program; tests build it around buffers.
type cli struct {
	stdin                 io.Reader
	stdout, stderr        io.Writer
	getenv                func(string) string
	version, commit       string
	serverCmds            func() []*cobra.Command
	createTokenInDatabase func(ctx context.Context, req client.CreateTokenRequest) (client.TokenCreated, error)
	// configPath is the contexts file; empty means
	// os.UserConfigDir()/compute/config.yaml.
	configPath string

	output      string // -o: table, json or yaml
	contextName string // --context: a saved context instead of the current one
	// running is set once a command's own code starts: an error before it
	// comes from parsing the command line and is bad usage.
	running bool
	// helpErr is a mistyped subcommand that came with --help (strictHelpFlag):
	// cobra has no error path from its help, so run reports it afterwards.
	helpErr error
}

func newCLI(p Program) *cli {
	return &cli{stdin: p.Stdin, stdout: p.Stdout, stderr: p.Stderr, getenv: p.Getenv, version: p.Version, commit: p.Commit,
		serverCmds: p.ServerCommands, createTokenInDatabase: p.CreateTokenInDatabase}
}

// Command groups of `compute --help`.
const (
	groupClient = "client"
	groupServer = "server"
)

// newRoot builds the command tree.
func (c *cli) newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "compute",
		Short: "The Better Compute control plane and its command line",
		Long: `compute runs the Better Compute control plane (serve, agent, migrate, check,
torture, projections) and talks to a running one over its HTTP API
(reservations, nodes, events tail, …).

The client commands use the server URL and token of the current context
(compute login saves one), or COMPUTE_SERVER and COMPUTE_TOKEN when set.
Exit codes: 0 success, 1 failure, 2 bad input, 3 not logged in or token
refused, 4 permission denied or tenant suspended, 5 not found, 6 conflict,
7 rate limited or unavailable, 8 server unreachable, 9 cursor expired
(docs/cli.md).`,
		Version:       c.versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          NoArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetIn(c.stdin)
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{err: flagError(cmd, err), cmd: cmd} })
	root.PersistentFlags().StringVarP(&c.output, "output", "o", "table", "output format: table, json or yaml")
	root.PersistentFlags().StringVar(&c.contextName, "context", "", "use this saved context instead of the current one")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("context", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		f, err := c.loadConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return f.names(), cobra.ShellCompDirectiveNoFileComp
	})
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		switch c.output {
		case "table", "json", "yaml":
		default:
			return usageError{err: fmt.Errorf("--output: %q is not one of table, json, yaml", c.output), cmd: cmd}
		}
		return nil
	}
	root.AddGroup(&cobra.Group{ID: groupClient, Title: "Client commands (over the HTTP API):"},
		&cobra.Group{ID: groupServer, Title: "Server commands (run the control plane; read COMPUTE_* settings):"})

	for _, cmd := range []*cobra.Command{
		c.loginCmd(), c.contextCmd(), c.whoamiCmd(), c.reservationsCmd(), c.instancesCmd(), c.nodesCmd(),
		c.poolsCmd(), c.sitesCmd(), c.quotasCmd(), c.priorityClassesCmd(), c.fairShareCmd(), c.tenantsCmd(), c.tokensCmd(), c.eventsCmd(), c.webhooksCmd(),
	} {
		cmd.GroupID = groupClient
		root.AddCommand(cmd)
	}
	if c.serverCmds != nil {
		for _, cmd := range c.serverCmds() {
			cmd.GroupID = groupServer
			root.AddCommand(cmd)
		}
	}
	strictHelp(root)
	strictHelpFlag(root, &c.helpErr)
	strictCompletion(root)
	markRunning(root, &c.running)
	return root
}

// markRunning wraps every RunE of the tree so that c.running is set when a
// command's own code starts.
func markRunning(cmd *cobra.Command, running *bool) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			*running = true
			return run(cmd, args)
		}
	}
	for _, sub := range cmd.Commands() {
		markRunning(sub, running)
	}
}

// run executes the command line args and returns the process's exit code,
// having written the error, if any, to stderr.
func run(ctx context.Context, c *cli, args []string) int {
	root := c.newRoot()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil && c.helpErr != nil {
		err = c.helpErr
	}
	if err == nil {
		return exitOK
	}
	if !c.running {
		var u usageError
		if !errors.As(err, &u) {
			err = usageError{err: err, cmd: cmd}
		}
	}
	return c.report(err)
}

// Group is a command that only holds subcommands: alone it prints its
// help; with an unknown subcommand it is bad usage, named.
func Group(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{err: unknownCommand(cmd, args[0]), cmd: cmd}
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(subs...)
	return cmd
}

// NoArgs refuses arguments, naming the first one. It and ArgsNamed are
// the Args of every command of the tree, main's server commands too, so
// that bad arguments read alike everywhere.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		if cmd.HasSubCommands() {
			return unknownCommand(cmd, args[0])
		}
		return fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args[0])
	}
	return nil
}

// ArgsNamed requires exactly the named positional arguments and names the
// missing or extra one.
func ArgsNamed(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < len(names) {
			return fmt.Errorf("missing argument %s (usage: %s)", names[len(args)], cmd.UseLine())
		}
		if len(args) > len(names) {
			return fmt.Errorf("unexpected argument %q (usage: %s)", args[len(names)], cmd.UseLine())
		}
		for i, a := range args {
			if strings.TrimSpace(a) == "" {
				return fmt.Errorf("argument %s is empty", names[i])
			}
		}
		return nil
	}
}

// userAgent names the CLI and its version to the server.
func (c *cli) userAgent() string {
	v := c.version
	if info, ok := debug.ReadBuildInfo(); ok && v == "" {
		v = info.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	return "compute-cli/" + v
}

// versionString is what --version prints: the version, the commit it was
// built from and the Go toolchain, from the binary's build info.
func (c *cli) versionString() string {
	v, built, goVersion := c.version, "unknown", runtime.Version()
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		goVersion = info.GoVersion
		var rev, modified string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = " (modified)"
				}
			}
		}
		if rev != "" {
			built = rev + modified
		}
	}
	if c.commit != "" { // set at link time
		built = c.commit
	}
	if v == "" {
		v = "(devel)"
	}
	return fmt.Sprintf("compute %s\ncommit: %s\ngo: %s %s/%s", v, built, goVersion, runtime.GOOS, runtime.GOARCH)
}

// configFile is where contexts are saved: os.UserConfigDir() (on Linux
// XDG_CONFIG_HOME, or ~/.config), compute/config.yaml.
func (c *cli) configFile() (string, error) {
	if c.configPath != "" {
		return c.configPath, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the configuration directory for contexts: %w", err)
	}
	return filepath.Join(dir, "compute", "config.yaml"), nil
}
