package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes. Scripts tell a command line that can never work (exitUsage: fix the command) from
// one that failed this time or found something wrong (exitError: a cluster, a missing object, a
// failed check, a stalled rollout).
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// exitCodesHelp closes `landlordctl --help`, and docs/cli.md says the same.
const exitCodesHelp = `Exit codes:
  0  success
  1  the command failed: the cluster or the secret store refused or could not be reached, an object
     was not found (what was found is still printed), a check failed, a rollout stalled, a wait
     timed out
  2  the command line is wrong: an unknown command, kind or flag, a missing or extra argument, a
     flag value that is refused before anything is contacted; nothing was changed`

// usageError is a command line that cannot work as typed. It exits with exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// asUsage marks err, when there is one, as a usage error.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

// commandError is an error a command returned once it ran, as opposed to one cobra returned while
// reading the command line (an unknown flag, a missing required flag, the wrong number of
// arguments), which is a usage error. It reads as the error it wraps.
type commandError struct{ err error }

func (e commandError) Error() string { return e.err.Error() }
func (e commandError) Unwrap() error { return e.err }

// exitCode is the exit status for err, the outcome of running a command.
func exitCode(err error) int {
	var usage usageError
	var ran commandError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &usage):
		return exitUsage
	case errors.As(err, &ran):
		return exitError
	}
	// Cobra's own: the command line did not parse.
	return exitUsage
}

// groupAnnotation marks a command that only groups others: its usage leaves out a line for
// running it alone.
const groupAnnotation = "landlordctl/group"

// groupUsageTemplate is cobra's usage template without the line for running a group alone.
func groupUsageTemplate(root *cobra.Command) string {
	return strings.Replace(root.UsageTemplate(), "{{if .Runnable}}",
		`{{if and .Runnable (ne (index .Annotations "`+groupAnnotation+`") "true")}}`, 1)
}

// markCommandErrors wraps every command's RunE so that what it returns is a commandError, and
// gives each command that only groups others (landlordctl, secrets, template) a RunE that prints
// its help, or refuses a subcommand it does not have: cobra would print the help for an unknown
// subcommand there, and exit 0.
func markCommandErrors(cmd *cobra.Command) {
	if cmd.RunE == nil && cmd.Run == nil && cmd.HasSubCommands() {
		if cmd.Annotations == nil {
			cmd.Annotations = map[string]string{}
		}
		cmd.Annotations[groupAnnotation] = "true"
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			return noArgs(c, args)
		}
	}
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if err := run(c, args); err != nil {
				var usage usageError
				if errors.As(err, &usage) {
					return err
				}
				return commandError{err}
			}
			return nil
		}
	}
	for _, c := range cmd.Commands() {
		markCommandErrors(c)
	}
}

// usageHint is the line after a usage error that says where the help is, as kubectl does.
func usageHint(cmd *cobra.Command) string {
	return fmt.Sprintf("Run '%s --help' for usage.", cmd.CommandPath())
}

// The argument checks of every command: cobra's say "accepts 1 arg(s), received 0"; these say
// what the command wants, from its usage line, and what it got. They are usage errors.

// noArgs refuses any argument; for a command with subcommands, an argument is a subcommand it
// does not have.
func noArgs(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return nil
	case cmd.HasSubCommands():
		if cmd.SuggestionsMinimumDistance <= 0 {
			// Cobra's default, which it sets only on the way to its own message.
			cmd.SuggestionsMinimumDistance = 2
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if suggestions := cmd.SuggestionsFor(args[0]); len(suggestions) > 0 {
			msg += ": did you mean " + strings.Join(suggestions, " or ") + "?"
		}
		return usageError{errors.New(msg)}
	}
	return usageErrorf("%s takes no arguments; got %s", commandWords(cmd), gotArgs(args))
}

// exactArgs wants n arguments.
func exactArgs(n int) cobra.PositionalArgs { return argsBetween(n, n) }

// minArgs wants n arguments or more.
func minArgs(n int) cobra.PositionalArgs { return argsBetween(n, -1) }

func argsBetween(least, most int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= least && (most < 0 || len(args) <= most) {
			return nil
		}
		want := strings.Join(strings.Fields(cmd.Use)[1:], " ")
		return usageErrorf("%s wants %s; got %s", commandWords(cmd), want, gotArgs(args))
	}
}

func gotArgs(args []string) string {
	switch len(args) {
	case 0:
		return "no arguments"
	case 1:
		return "1 argument: " + args[0]
	}
	return fmt.Sprintf("%d arguments: %s", len(args), strings.Join(args, " "))
}

// commandWords is the command as typed after the program's name (rollout halt), for messages
// the program's name already starts.
func commandWords(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().CommandPath()+" ")
}
