package cli

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A typo of a command or a flag names what was probably meant, as git and
// kubectl do: "unknown command" alone leaves the user to read the whole
// --help for the one letter they got wrong.

// unknownCommand is the error of name given where cmd expects one of its
// subcommands, with the closest of them when one is close.
func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %s?", orList(s))
	}
	return fmt.Errorf("%s", msg)
}

// flagError adds to pflag's "unknown flag: --stat" the flag meant.
func flagError(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var near []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && (editDistance(name, f.Name) <= 2 || (len(name) >= 3 && strings.HasPrefix(f.Name, name))) {
			near = append(near, "--"+f.Name)
		}
	})
	if len(near) == 0 {
		return err
	}
	return fmt.Errorf("%w; did you mean %s?", err, orList(near))
}

// GoFlagError is flagError for a server command that parses its own flags
// with package flag (torture): its "flag provided but not defined: -opss"
// reads as the tree's commands' unknown flag does, "unknown flag: --opss;
// did you mean --ops?". Other errors are returned as they are.
func GoFlagError(fs *flag.FlagSet, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return err
	}
	msg := "unknown flag: --" + name
	var near []string
	fs.VisitAll(func(f *flag.Flag) {
		if editDistance(name, f.Name) <= 2 || (len(name) >= 3 && strings.HasPrefix(f.Name, name)) {
			near = append(near, "--"+f.Name)
		}
	})
	if len(near) > 0 {
		msg += fmt.Sprintf("; did you mean %s?", orList(near))
	}
	return errors.New(msg)
}

// orList is "a", "a or b", "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// strictHelp makes `compute help NAME…` refuse a NAME that is no command,
// as running it would, instead of printing the parent's help and exiting 0
// as if NAME were a topic it had found.
func strictHelp(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	for _, h := range root.Commands() {
		if h.Name() != "help" {
			continue
		}
		h.Run = nil
		h.RunE = func(h *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil {
				return usageError{err: err, cmd: h}
			}
			if len(rest) > 0 {
				return usageError{err: unknownCommand(cmd, rest[0]), cmd: cmd}
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		}
	}
}

// strictHelpFlag makes `compute GROUP NAME --help` (or -h) refuse a NAME
// that is no subcommand of GROUP, as `compute help GROUP NAME` and running
// it do. Cobra answers --help before it checks a group's arguments, so
// otherwise a typo printed GROUP's help and exited 0, as if NAME existed.
// Cobra's help function returns no error: the refusal is left in *refused
// for run to report, and nothing is printed on stdout.
func strictHelpFlag(root *cobra.Command, refused *error) {
	help := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		// Flags().Args() holds the positional arguments the --help run
		// parsed; `compute help GROUP` shows GROUP's help without parsing
		// its flags, so it has none.
		if rest := cmd.Flags().Args(); cmd.HasSubCommands() && len(rest) > 0 {
			*refused = usageError{err: unknownCommand(cmd, rest[0]), cmd: cmd}
			return
		}
		help(cmd, args)
	})
}

// strictCompletion makes `compute completion SHELL` refuse a SHELL it has
// no script for (tcsh, a typo), as every group of the tree does, instead
// of cobra's default: its help, exit 0, and no script for the eval that
// was to load it.
func strictCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, cmd := range root.Commands() {
		if cmd.Name() == "completion" {
			cmd.Args = cobra.ArbitraryArgs
			cmd.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					return usageError{err: unknownCommand(cmd, args[0]), cmd: cmd}
				}
				return cmd.Help()
			}
		}
	}
}
