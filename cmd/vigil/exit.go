package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api"
)

// The exit codes, in one place. A shell branches on them; `vigil --help`,
// `vigil watch wait --help` and the README list them from exitCodesHelp.
const (
	// ExitFired: the watch fired (or changed) with a result other than a
	// failure; for any other command, it did what was asked.
	ExitFired = 0
	// ExitFailed: the watch fired with a result of failure, failed or
	// error; for any other command, an error none of the codes below name.
	ExitFailed = 1
	// ExitExpired: the watch's deadline passed first.
	ExitExpired = 2
	// ExitNoOutcome: the watch ended without an outcome and none will
	// come: cancelled (a recipient's pause cancels its watches),
	// undeliverable or unwatchable.
	ExitNoOutcome = 3
	// ExitStillPending: watch wait --timeout ran out with the watch still
	// pending; it stays registered.
	ExitStillPending = 4
	// ExitHost: the host could not be asked: it did not answer, refused
	// the token (401), or answered 5xx (among them 507
	// insufficient_storage: its disk is full, nothing was written, and
	// the same command succeeds once space is freed). Nothing is known of
	// the watch.
	ExitHost = 5
	// ExitNotConfirmed: a command that asks before it does something it
	// cannot undo (a pause that cancels watches) was not confirmed: the
	// question was answered no, or there was no terminal to ask on and no
	// --yes. Nothing was changed. Not a usage mistake: the same command
	// with --yes, or a yes, does it.
	ExitNotConfirmed = 6
	// ExitUsage: the command was wrong: a bad flag, a missing or extra
	// argument, an unknown subcommand, or a request the host refused as
	// the caller's mistake (a 4xx other than 401: invalid_params,
	// watch_unobservable, not_found, …).
	ExitUsage = 64
	// ExitInterrupted: interrupted (Ctrl-C, SIGTERM) while waiting; the
	// watch stays registered.
	ExitInterrupted = 130
)

// exitCodesHelp documents the exit codes, for --help and the README.
const exitCodesHelp = `Exit codes:
  0   fired (or changed) with a result other than failure; any other command: done
  1   fired with a result of failure, failed or error; any other command: an error
  2   expired: the deadline passed first
  3   ended without an outcome: cancelled (a pause cancels), undeliverable, unwatchable
  4   watch wait --timeout ran out with the watch still pending (it stays registered)
  5   the host could not be asked: no answer, token refused (401), or a 5xx
      (507 insufficient_storage: its disk is full; retry once space is freed)
  6   not confirmed: the question was answered no, or there was no terminal to
      ask on and no --yes; nothing was changed
  64  usage: a bad flag or argument, an unknown subcommand, or a request the
      host refused as the caller's mistake (a 4xx other than 401)
  130 interrupted while waiting (the watch stays registered)
vigil plugin try reports on a plugin, not a watch: its codes are its own (its --help).`

// exitError ends the process with Code and prints nothing more: the
// command has already said what happened.
type exitError struct{ Code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// usageError is a command used wrongly: ExitUsage.
type usageError struct{ err error }

func (u *usageError) Error() string { return u.err.Error() }
func (u *usageError) Unwrap() error { return u.err }

func usagef(format string, a ...any) error { return &usageError{fmt.Errorf(format, a...)} }

// notConfirmedError is a change the user did not confirm:
// ExitNotConfirmed.
type notConfirmedError struct{ err error }

func (n *notConfirmedError) Error() string { return n.err.Error() }
func (n *notConfirmedError) Unwrap() error { return n.err }

func notConfirmedf(format string, a ...any) error {
	return &notConfirmedError{fmt.Errorf(format, a...)}
}

// exitCode is what the process exits with for err, the error a command
// returned: the one place errors become exit codes. An API error is the
// host's answer (401 and 5xx: the host could not be asked; any other 4xx:
// the caller's mistake); a *url.Error is a host that did not answer.
func exitCode(err error) int {
	var (
		exit  *exitError
		usage *usageError
		nc    *notConfirmedError
		ae    *api.Error
		ue    *url.Error
	)
	switch {
	case err == nil:
		return ExitFired
	case errors.As(err, &exit):
		return exit.Code
	case errors.As(err, &usage):
		return ExitUsage
	case errors.As(err, &nc):
		return ExitNotConfirmed
	case errors.As(err, &ae):
		if ae.Code == api.CodeUnauthorized || api.Status(ae.Code) >= 500 {
			return ExitHost
		}
		return ExitUsage
	case errors.As(err, &ue) && !errors.Is(err, context.Canceled):
		return ExitHost
	}
	return ExitFailed
}

// execute runs root with args as given (root.SetArgs), and types what
// cobra refuses before a command runs (a bad flag, a missing required
// flag, flags that exclude each other, bad arguments) as usage errors: an
// error returned before any RunE began is one, whatever its text.
func execute(ctx context.Context, root *cobra.Command) error {
	started := false
	var wrap func(c *cobra.Command)
	wrap = func(c *cobra.Command) {
		if c.HasSubCommands() {
			groupCommand(c)
		}
		if run := c.RunE; run != nil {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				started = true
				return run(cmd, args)
			}
		}
		for _, sub := range c.Commands() {
			wrap(sub)
		}
	}
	wrap(root)
	err := root.ExecuteContext(ctx)
	if err != nil && !started {
		var usage *usageError
		if !errors.As(err, &usage) {
			err = &usageError{err}
		}
	}
	return err
}

// groupCommand makes a command that only holds subcommands refuse an
// unknown one (with a suggestion) instead of printing its help and
// succeeding; with no argument it prints its help.
func groupCommand(c *cobra.Command) {
	if c.RunE != nil || c.Run != nil {
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2 // cobra's default, which only its root applies
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return usagef("%s (see %s --help)", msg, cmd.CommandPath())
	}
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}

// exactArgs wants one argument per name, and names the one missing or
// the one too many: "missing ID: vigil watch wait ID".
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		usage := strings.TrimSpace(cmd.CommandPath() + " " + strings.Join(names, " "))
		switch {
		case len(args) < len(names):
			return usagef("missing %s: %s", names[len(args)], usage)
		case len(args) > len(names):
			return usagef("unexpected argument %q: %s", args[len(names)], usage)
		}
		for i, a := range args {
			if strings.TrimSpace(a) == "" {
				return usagef("empty %s: %s", names[i], usage)
			}
		}
		return nil
	}
}
