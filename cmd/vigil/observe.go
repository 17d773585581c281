package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
)

// newObserve is `vigil observe`: report items seen in outside sources.
func newObserve(stdout io.Writer) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "observe",
		Short: "Report items seen in an outside source to a server",
		Args:  cobra.NoArgs,
	}
	addClientFlags(cmd, &cf)
	var (
		rec      api.ObserveRequest
		textFile string
	)
	var record *cobra.Command
	record = &cobra.Command{
		Use:   "record SCOPE --item ID --thread ID [--text T | --text-file F] [--revision R] [--source S] [--run RUN]",
		Short: "Record an item; a repeat is a duplicate, an edit a new revision",
		Long: `Record one item seen in an outside source of SCOPE. The reporter is this
client's principal (its token), which the server's configuration must list
as a reporter of the source. --source may be left out when the principal
reports exactly one source of the scope.

The item's identity is (source, item, revision): recording it again with the
same thread and text is a duplicate and changes nothing (exit 0, "duplicate"
on stderr); with other text it is refused (once_conflict). An edit is a new
--revision, the source's own edit mark.

--run names the run that saw the item (default $VIGIL_RUN), such as a
scheduled job's occurrence: it is kept on the event for audit and is no
part of the item's identity. Recording is budgeted per principal and per
run (1000 new items a minute by default); records naming no run are one
run of the principal. A repeat never spends budget, so rereading a source
is never refused for what was already recorded.

A scope with no observe entry left answers observe_unavailable.

--text-file - reads the text from standard input.`,
		Example: `  vigil observe record support --item 1700000000.0001 --thread 1700000000.0001 \
      --text "printer on fire" --run "nightly@2026-12-01T20:00:00+00:00"`,
		Args: exactArgs("SCOPE"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			switch {
			case !record.Flags().Changed("run"):
				rec.Run = os.Getenv("VIGIL_RUN") // empty is unset, as for VIGIL_SERVER
			case rec.Run == "":
				// An unset variable expanded into --run "$RUN" is a
				// mistake to report, not a record with no run.
				return errors.New("--run is empty: name the run that saw the item, or leave --run out")
			}
			if textFile != "" {
				var b []byte
				var err error
				if textFile == "-" {
					b, err = io.ReadAll(io.LimitReader(record.InOrStdin(), 1<<20))
				} else {
					b, err = os.ReadFile(textFile)
				}
				if err != nil {
					return fmt.Errorf("--text-file: %w", err)
				}
				rec.Text = string(b)
			}
			got, err := c.Record(ctx, args[0], rec)
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(stdout, got)
			}
			state := "recorded"
			if got.Duplicate {
				state = "duplicate"
			}
			fmt.Fprintf(stdout, "%s\t%s\tseq %d\n", state, got.ThreadKey, got.Event.Seq)
			return nil
		}),
	}
	fl := record.Flags()
	fl.StringVar(&rec.Item, "item", "", "the source's id of the item (required)")
	fl.StringVar(&rec.Thread, "thread", "", "the thread the item belongs to (required)")
	fl.StringVar(&rec.Text, "text", "", "the item's text")
	fl.StringVar(&textFile, "text-file", "", "read the text from this file (- for standard input)")
	fl.StringVar(&rec.Revision, "revision", "", "the source's edit mark of the item")
	fl.StringVar(&rec.Source, "source", "", "the source (when the principal reports several)")
	fl.StringVar(&rec.Run, "run", "", "the run that saw the item (default $VIGIL_RUN)")
	_ = record.MarkFlagRequired("item")
	_ = record.MarkFlagRequired("thread")
	record.MarkFlagsMutuallyExclusive("text", "text-file")
	cmd.AddCommand(record)
	return cmd
}

// newWork is `vigil work`: the Work observed threads become.
func newWork(stdout io.Writer) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "work",
		Short: "List, show, claim and complete the Work observed threads become",
		Args:  cobra.NoArgs,
	}
	addClientFlags(cmd, &cf)
	showOne := func(w api.Work) error {
		if cf.json {
			return printJSON(stdout, w)
		}
		tw := table(stdout)
		fmt.Fprintf(tw, "id\t%s\nscope\t%s\nkind\t%s\ntitle\t%s\nthread\t%s\nstate\t%s\ninputs\t%d\nconsumed\t%d\nclaimed by\t%s\ncreated\t%s\n",
			w.ID, w.Scope, w.Kind, w.Title, w.ThreadKey, w.State, w.InputCount, w.Consumed, orDash(w.ClaimedBy), timeText(&w.CreatedAt))
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, in := range w.Inputs {
			fmt.Fprintf(stdout, "\n#%d %s/%s %s by %s at %s\n%s\n", in.N, in.Source, in.Item, orDash(in.Revision), orDash(in.Reporter), timeText(&in.RecordedAt), indent(in.Text))
		}
		return nil
	}
	var state string
	ls := &cobra.Command{
		Use:   "ls SCOPE [--state open|completed]",
		Short: "List a scope's Work",
		Args:  exactArgs("SCOPE"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			wl, err := c.ListWork(ctx, args[0], state)
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(stdout, wl)
			}
			tw := table(stdout)
			fmt.Fprintln(tw, "ID\tSTATE\tINPUTS\tCONSUMED\tCLAIMED BY\tTITLE")
			for _, w := range wl.Work {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", w.ID, w.State, w.InputCount, w.Consumed, orDash(w.ClaimedBy), w.Title)
			}
			return tw.Flush()
		}),
	}
	ls.Flags().StringVar(&state, "state", "", "only Work in this state (open or completed)")
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a Work with its inputs in order",
		Args:  exactArgs("ID"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			w, err := c.GetWork(ctx, args[0])
			if err != nil {
				return err
			}
			return showOne(w)
		}),
	}
	var recipient string
	claim := &cobra.Command{
		Use:   "claim ID --for RECIPIENT",
		Short: "Claim a Work for a recipient, who is given every input so far",
		Long: `Claim a Work for RECIPIENT. Its inputs so far are printed and count as
given: a later wait on the thread
(vigil watch add observe.thread --for RECIPIENT --param work_id=ID)
wakes only on newer items.`,
		Args: exactArgs("ID"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			w, err := c.ClaimWork(ctx, args[0], recipient)
			if err != nil {
				return err
			}
			return showOne(w)
		}),
	}
	claim.Flags().StringVar(&recipient, "for", "", "the recipient that takes the Work (required)")
	_ = claim.MarkFlagRequired("for")
	complete := &cobra.Command{
		Use:   "complete ID",
		Short: "Complete a Work: later items of its thread start nothing",
		Args:  exactArgs("ID"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			w, err := c.CompleteWork(ctx, args[0])
			if err != nil {
				return err
			}
			return showOne(w)
		}),
	}
	cmd.AddCommand(ls, show, claim, complete)
	return cmd
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }
