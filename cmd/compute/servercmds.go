package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/cmd/compute/cli"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/projections"
)

// serverCmds are the subcommands that run the control plane itself. They
// read the COMPUTE_* settings (docs/configuration.md), log JSON to stderr
// (check, torture and projections rebuild, whose output is for a person,
// say their failure as the client commands do: plainErrors) and keep the
// flags they always had: serve, agent and torture parse their own flags
// (Go flag syntax, -flag or --flag), so cobra passes their arguments
// through untouched. Package cli puts them in its command tree, under their
// own heading of --help (cli.Program.ServerCommands).
func serverCmds() []*cobra.Command {
	serveCmd := passThrough("serve [--demo]", "Run the API and the workers (a private PostgreSQL when DATABASE_URL is unset)",
		`serve runs the roles in COMPUTE_ROLES (api, worker, dispatcher, gateway; all by
default) against DATABASE_URL, or, when it is unset, a private PostgreSQL it
starts in COMPUTE_PG_DIR (.compute/pg). It applies migrations first. On the
first start against a database without any API token it prints a bootstrap
operator token (shown once). Ctrl-C or SIGTERM shut it down gracefully.

Its own flag:
  --demo   seed a demo fleet (a site, a pool, three nodes, quotas for tenant
           acme) and print an operator and a tenant token`,
		func(ctx context.Context, cfg config.Config, logger *slog.Logger, args []string) error {
			return serve(ctx, cfg, logger, args)
		})
	agentCmd := passThrough("agent --node NODE_ID [flags]", "Run a node daemon (see docs/concepts/nodes.md)",
		`agent runs the node daemon: it joins once with a single-use join token,
keeps a session with a gateway and runs the allocations' workloads. It
needs no database. It reads the flags below and two environment variables,
COMPUTE_JOIN_TOKEN (the join token, when --join-token-file is not given)
and COMPUTE_LOG_LEVEL; nothing of the client commands' configuration.`,
		func(ctx context.Context, _ config.Config, _ *slog.Logger, args []string) error {
			return agentCmd(ctx, args)
		})
	agentCmd.Annotations = map[string]string{"noConfig": "true"}
	agentCmd.SetUsageFunc(passThroughUsage(agent.PrintFlags))
	tortureCmd := passThrough("torture [--ops N] [--concurrency C] [--check-every K] [--seed S] [--keep]",
		"Attack the capacity core in a scratch database and judge it",
		`torture runs concurrent creates, extends, releases and operator churn on the
simulated clock in a scratch database (a private PostgreSQL of its own when
DATABASE_URL is unset, so it runs beside compute serve), and judges the run
by the invariants, a linearizability check and PostgreSQL's deadlock errors.

Its own flags:
  --ops N           operations to run in all (1000, also the least)
  --concurrency C   goroutines running them (32)
  --check-every K   operations between invariant checks (100)
  --seed S          seed of the operation choices (1)
  --keep            keep the scratch database when the run fails (needs DATABASE_URL)`,
		tortureCmd)
	tortureCmd.Annotations = map[string]string{plainErrors: "true"}

	migrateCmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply database migrations and exit",
		Args:  cli.NoArgs,
		RunE: serverRun("migrate", func(ctx context.Context, cfg config.Config, logger *slog.Logger, _ []string) error {
			return migrateCmd(ctx, cfg, logger)
		}),
	}
	checkCmd := &cobra.Command{
		Use:   "check",
		Short: "Check the capacity invariants against the database; report drift and overdue pruning",
		Long: `check runs the capacity invariants (the queries the torture run judges by)
against the database of DATABASE_URL or the private PostgreSQL, and reports
nodes whose daemon lags their desired state and rows overdue for pruning.
It exits 1 when an invariant is violated. It changes nothing: on a database
without some of this release's migrations it applies none and exits 1
(run compute migrate first).`,
		Args:        cli.NoArgs,
		Annotations: map[string]string{plainErrors: "true"},
		RunE: serverRun("check", func(ctx context.Context, cfg config.Config, logger *slog.Logger, _ []string) error {
			return checkCmd(ctx, cfg, logger)
		}),
	}
	rebuildCmd := &cobra.Command{
		Use:   "rebuild NAME",
		Short: "Replay the log into a fresh read model and swap it in",
		// An unknown NAME is bad input, said before the database is opened
		// (where, beside a running serve, it would be refused first).
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cli.ArgsNamed("NAME")(cmd, args); err != nil {
				return err
			}
			if _, err := projections.ByName(args[0]); err != nil {
				return fmt.Errorf("NAME: %w", err)
			}
			return nil
		},
		ValidArgs:   []string{projections.NameReservations, projections.NameFleet, projections.NameDeviceHolders, projections.NameUsageWindows},
		Annotations: map[string]string{plainErrors: "true"},
		RunE: serverRun("projections", func(ctx context.Context, cfg config.Config, logger *slog.Logger, args []string) error {
			return projectionsCmd(ctx, cfg, logger, append([]string{"rebuild"}, args...))
		}),
	}
	for _, c := range []*cobra.Command{migrateCmd, checkCmd, rebuildCmd} {
		c.SetUsageFunc(ownFlagsUsage)
	}
	projectionsCmd := cli.Group("projections", "Manage the read models (projections rebuild NAME)", rebuildCmd)
	return []*cobra.Command{serveCmd, agentCmd, migrateCmd, checkCmd, tortureCmd, projectionsCmd}
}

// serverFunc is a server-side command's body.
type serverFunc func(ctx context.Context, cfg config.Config, logger *slog.Logger, args []string) error

// plainErrors is the annotation of a server command whose failure is said
// as a client command's is, `compute: <message>` on stderr (docs/cli.md),
// rather than logged: one that runs once and prints a report for a person
// on stdout (check, torture, projections rebuild), where a JSON log line
// is out of place.
const plainErrors = "plainErrors"

// serverRun loads the configuration and runs f, logging its error as the
// server does (JSON on stderr), or with plainErrors as `compute: <message>`
// (with the --help hint for bad flags), and exiting 1 (cli.ErrReported:
// it said why itself); a configuration error, and bad flags (badFlags),
// exit 2.
func serverRun(name string, f serverFunc) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := clientFlagsGiven(cmd); err != nil {
			return err
		}
		var cfg config.Config
		if cmd.Annotations["noConfig"] == "" {
			var err error
			if cfg, err = config.Load(); err != nil {
				return cli.Usage(err)
			}
		}
		logger := newLogger(cfg.LogLevel)
		err := f(cmd.Context(), cfg, logger, args)
		if err == nil || errors.Is(err, flag.ErrHelp) {
			return nil
		}
		if errors.Is(err, cli.ErrReported) { // f logged its failure itself
			return err
		}
		bad := errors.As(err, new(badFlags))
		if cmd.Annotations[plainErrors] != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "compute: %v\n", err)
			if bad {
				fmt.Fprintf(cmd.ErrOrStderr(), "Run '%s --help' for usage.\n", cmd.CommandPath())
			}
		} else {
			logger.Error("compute "+name+" failed", "err", err)
		}
		if bad {
			return cli.ErrReportedUsage
		}
		return cli.ErrReported
	}
}

// clientFlags are the client commands' global flags (package cli), which
// cobra parses for every command beneath the root but the server commands
// do not read: they take DATABASE_URL and COMPUTE_* (docs/configuration.md),
// not a saved context, and print their own report.
var clientFlags = []string{"context", "output"}

// clientFlagsGiven refuses a client commands' flag given to a server
// command cobra parses (migrate, check, projections rebuild), as bad input
// (exit 2), rather than accepting and ignoring it: `compute check --context
// prod` would otherwise check whatever database DATABASE_URL names. The
// commands that parse their own flags refuse it as an unknown flag.
func clientFlagsGiven(cmd *cobra.Command) error {
	for _, name := range clientFlags {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			return cli.Usage(fmt.Errorf("%s does not read --%s: it runs against DATABASE_URL (docs/configuration.md)",
				strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), name))
		}
	}
	return nil
}

// ownFlagsUsage is the usage of a server command cobra parses: its usage
// line and its own flags, without the client commands' global flags it
// does not read (clientFlags).
func ownFlagsUsage(cmd *cobra.Command) error {
	w := cmd.OutOrStderr()
	fmt.Fprintf(w, "Usage:\n  %s\n", cmd.UseLine())
	if fs := cmd.LocalFlags(); fs.HasAvailableFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
	}
	return nil
}

// badFlags is an error of a server command's own flag parsing (an unknown
// flag, a value that does not parse, a required flag left out): bad input,
// which exits 2 like a client command's (docs/cli.md, exit codes), not 1
// like a server command that failed.
type badFlags struct{ err error }

func (e badFlags) Error() string { return e.err.Error() }
func (e badFlags) Unwrap() error { return e.err }

// passThrough is a server-side command that parses its own flags: its
// arguments reach f as given. --help prints the command's help (and the
// flags its parser knows, on stderr) without running it.
func passThrough(use, short, long string, f serverFunc) *cobra.Command {
	cmd := &cobra.Command{
		Use:                use,
		Short:              short,
		Long:               long,
		DisableFlagParsing: true,
	}
	name := cmd.Name()
	run := serverRun(name, f)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		end := slices.Index(args, "--")
		if end < 0 {
			end = len(args)
		}
		if slices.ContainsFunc(args[:end], func(a string) bool { return a == "-h" || a == "--help" || a == "-help" }) {
			return cmd.Help()
		}
		return run(cmd, args)
	}
	cmd.SetUsageFunc(passThroughUsage(nil))
	return cmd
}

// passThroughUsage is the usage of a command that parses its own flags:
// its usage line and, from flags when it is given, the flags its parser
// reads, on the help's stdout. It leaves out the client commands' global
// flags (--context, --output), which cobra lists under every command but
// such a command's parser does not know: `compute agent --context x` is
// refused as an unknown flag.
func passThroughUsage(flags func(io.Writer)) func(*cobra.Command) error {
	return func(cmd *cobra.Command) error {
		w := cmd.OutOrStderr()
		fmt.Fprintf(w, "Usage:\n  %s\n", cmd.UseLine())
		if flags != nil {
			fmt.Fprint(w, "\nFlags (-flag or --flag; -h, --help prints this):\n")
			flags(w)
		}
		return nil
	}
}
