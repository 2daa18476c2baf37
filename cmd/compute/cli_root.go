package main

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
)

// version is the release version, set by the release build with
// -ldflags "-X main.version=v1.2.3" (commit, in version.go, likewise);
// empty, --version reports the module version from the build info.
var version string

// cli is one invocation of the command line: where it reads and writes, the
// environment it sees, and the global flags. main builds it from the
// process; tests build it around buffers.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// configPath is the contexts file; empty means
	// os.UserConfigDir()/compute/config.yaml.
	configPath string

	output      string // -o: table, json or yaml
	contextName string // --context: a saved context instead of the current one
	// running is set once a command's own code starts: an error before it
	// comes from parsing the command line and is bad usage.
	running bool
}

func newCLI(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *cli {
	return &cli{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
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
refused, 4 permission denied, 5 not found, 6 conflict, 7 rate limited or
unavailable, 8 server unreachable, 9 cursor expired (docs/cli.md).`,
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          noArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetIn(c.stdin)
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{err: err, cmd: cmd} })
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
		c.poolsCmd(), c.sitesCmd(), c.quotasCmd(), c.tokensCmd(), c.eventsCmd(), c.webhooksCmd(),
	} {
		cmd.GroupID = groupClient
		root.AddCommand(cmd)
	}
	for _, cmd := range c.serverCmds() {
		cmd.GroupID = groupServer
		root.AddCommand(cmd)
	}
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

// group is a command that only holds subcommands: alone it prints its
// help; with an unknown subcommand it is bad usage, named.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{err: fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath()), cmd: cmd}
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(subs...)
	return cmd
}

// noArgs refuses arguments, naming the first one.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		if cmd.HasSubCommands() {
			return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
		}
		return fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args[0])
	}
	return nil
}

// argsNamed requires exactly the named positional arguments and names the
// missing or extra one.
func argsNamed(names ...string) cobra.PositionalArgs {
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
func userAgent() string {
	v := version
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
func versionString() string {
	v, built, goVersion := version, "unknown", runtime.Version()
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
	if commit != "" { // set at link time
		built = commit
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
