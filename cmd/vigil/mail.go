package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
)

func newMail(stdout, stderr io.Writer) *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "mail",
		Short: "Read a recipient's mailbox on a server",
		Args:  cobra.NoArgs,
	}
	addClientFlags(cmd, &cf)
	cmd.AddCommand(newMailRead(&cf, stdout, stderr))
	return cmd
}

func newMailRead(cf *clientFlags, stdout, stderr io.Writer) *cobra.Command {
	var (
		after      uint64
		wait       time.Duration
		follow     bool
		cursorFile string
	)
	cmd := &cobra.Command{
		Use:   "read RECIPIENT [--after N | --cursor FILE] [--wait D | --follow]",
		Short: "Read the messages after a cursor, long-poll for them, or follow the mailbox",
		Long: `Read RECIPIENT's messages after the cursor --after (a message seq; 0 reads
from the start). The next cursor is printed on stderr (in the JSON as
"next").

--wait D holds the read until a message lands or D passes (at most 60s).
--follow streams the mailbox (server-sent events) and prints each message
as it lands, one line each (one JSON object per line with --json), until
interrupted; when the stream breaks it reconnects from the last message
printed.

--cursor FILE keeps the cursor in FILE: the read starts after the seq FILE
holds (from the start when FILE does not exist yet), and FILE is updated
after each message is printed (--follow) or after the batch (without it),
by writing a temporary file beside it and renaming it over FILE, so a
reader that is stopped at any moment resumes where it stopped, without a
message lost or, but for the one being printed, repeated.`,
		Args: exactArgs("RECIPIENT"),
		RunE: cf.run(func(ctx context.Context, c *client.Client, args []string) error {
			rid := args[0]
			save := func(uint64) error { return nil }
			if cursorFile != "" {
				var err error
				if after, err = readCursor(cursorFile); err != nil {
					return err
				}
				save = func(seq uint64) error { return writeCursor(cursorFile, seq) }
			}
			if follow {
				return followMailbox(ctx, c, rid, after, save, cf.json, stdout, stderr)
			}
			mb, err := c.ReadMailbox(ctx, rid, after, wait, 0)
			if err != nil {
				return err
			}
			if cf.json {
				if err := printJSON(stdout, mb); err != nil {
					return err
				}
				return save(mb.Next)
			}
			tw := table(stdout)
			fmt.Fprintln(tw, "SEQ\tWATCH\tKIND\tTYPE\tRESULT\tSUMMARY\tAT")
			for _, m := range mb.Messages {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Seq, m.WatchID, m.Kind, m.Type, orDash(m.Outcome.Result), orDash(m.Outcome.Summary), timeText(&m.At))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "next: --after %d\n", mb.Next)
			return save(mb.Next)
		}),
	}
	fl := cmd.Flags()
	fl.Uint64Var(&after, "after", 0, "read the messages after this seq")
	fl.DurationVar(&wait, "wait", 0, "wait up to this long for a message (at most 60s)")
	fl.BoolVar(&follow, "follow", false, "stream messages as they land, until interrupted")
	fl.StringVar(&cursorFile, "cursor", "", "keep the cursor in this file: start after it, update it after each message printed")
	cmd.MarkFlagsMutuallyExclusive("wait", "follow")
	cmd.MarkFlagsMutuallyExclusive("after", "cursor")
	return cmd
}

// followMailbox prints rid's messages from after as they land until ctx
// ends, calling save with each one's seq once it is printed. A stream that breaks once it was up is reopened from the last
// message printed, after a pause that doubles up to 30 s; a refusal (an
// unknown recipient) or a server that never answered is returned.
func followMailbox(ctx context.Context, c *client.Client, rid string, after uint64, save func(uint64) error, asJSON bool, stdout, stderr io.Writer) error {
	const maxPause = 30 * time.Second
	pause, connected := time.Second, false
	for {
		var printErr error
		err := c.StreamMailbox(ctx, rid, after, func(m api.Message) error {
			connected, pause = true, time.Second
			if printErr = printMessageLine(stdout, m, asJSON); printErr != nil {
				return printErr
			}
			after = m.Seq
			if printErr = save(m.Seq); printErr != nil {
				return printErr
			}
			return nil
		})
		var ae *api.Error
		switch {
		case ctx.Err() != nil:
			return nil // interrupted: the normal end of --follow
		case printErr != nil, errors.As(err, &ae):
			return err
		case errors.Is(err, client.ErrStreamEnded):
			connected = true
		case !connected:
			return err
		}
		fmt.Fprintf(stderr, "the stream ended (%v); reconnecting after seq %d in %s\n", err, after, pause)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		pause = min(2*pause, maxPause)
	}
}

func printMessageLine(w io.Writer, m api.Message, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintf(w, "%d  %s  %s  %s  %s  %s  %s\n", m.Seq, m.WatchID, m.Kind, m.Type, orDash(m.Outcome.Result), orDash(m.Outcome.Summary), timeText(&m.At))
	return err
}

// readCursor reads the seq a cursor file holds: 0 when the file does not
// exist yet.
func readCursor(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("--cursor %s: %w", path, err)
	}
	seq, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, usagef("--cursor %s: want a message seq (a whole number) in the file, found %q", path, clip(strings.TrimSpace(string(b)), 40))
	}
	return seq, nil
}

// writeCursor replaces the cursor file's content with seq, atomically: a
// temporary file beside it, synced, renamed over it.
func writeCursor(path string, seq uint64) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("--cursor %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is nothing to remove
	if _, err := fmt.Fprintf(tmp, "%d\n", seq); err != nil {
		tmp.Close()
		return fmt.Errorf("--cursor %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("--cursor %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--cursor %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--cursor %s: %w", path, err)
	}
	return nil
}
