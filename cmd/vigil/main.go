package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := execute(ctx, newRoot(os.Stdout, os.Stderr)); err != nil {
		var exitErr *exitError
		if !errors.As(err, &exitErr) {
			fmt.Fprintln(os.Stderr, "vigil:", err)
		}
		os.Exit(exitCode(err))
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "vigil",
		Short: "A watch host: register what you wait for, stop, and be woken",
		Long: `vigil is a watch host. An agent that waits on something slow (a CI run, a URL,
a timer, an issue) registers a watch and stops; vigil probes it on one
scheduler and wakes the agent when the outcome settles. Each predicate kind
is a sandboxed WebAssembly plugin.

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newServe(stderr), newPlugins(stdout, stderr),
		newWatch(stdout, stderr), newMail(stdout, stderr), newRecipient(stdout, stderr), newPlugin(stdout, stderr), newFetch(stdout),
		newObserve(stdout), newWork(stdout), newSignal(stdout), newConformance(stdout, stderr), newCluster(stdout, time.Now), newMCP(stderr))
	root.AddCommand(newStore(stdout, stderr))
	return root
}

// newLogger logs text to a terminal and JSON otherwise.
func newLogger(w io.Writer) *slog.Logger {
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return slog.New(slog.NewTextHandler(w, nil))
		}
	}
	return slog.New(slog.NewJSONHandler(w, nil))
}
