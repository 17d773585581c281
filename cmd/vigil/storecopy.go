package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
	"github.com/vigilhq/vigil/store/natsstore"
	"github.com/vigilhq/vigil/store/storecopy"
)

// newStore is the `vigil store` group: operations on a store that no
// host is serving.
func newStore(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Operate on a store no host is serving (copy between badger and JetStream)",
	}
	cmd.AddCommand(newStoreCopy(stdout, stderr))
	return cmd
}

// storeEnd is one side of a copy, opened.
type storeEnd interface {
	storecopy.Destination
	Close() error
}

func newStoreCopy(stdout, stderr io.Writer) *cobra.Command {
	var (
		from, to       string
		nc             natsstore.Config
		tlsCA, tlsCert string
		tlsKey         string
		resume         bool
		batch          int
	)
	cmd := &cobra.Command{
		Use:   "copy --from SRC --to DST",
		Short: "Copy every record of one store into another: a badger directory and a JetStream bucket, either way",
		Long: `Copy a store into another: a single host's badger directory (--data DIR of
vigil serve) into a NATS JetStream cluster's bucket (nats://host:port[,...]),
or back. SRC and DST are each a directory or a nats:// URL list. A
directory is serve's data directory: the badger store is DIR/store, as
serve keeps it (a source may also name the store directory itself), so
vigil serve --data DIR serves what a copy wrote to DIR.

What is copied: every record, as stored: every watch row in every state
(pending with its schedule and durable next check, settled with its
outcome, receipt and times), rows held aside by this build, the recipients
(status, webhook and its secret, phase, activity, reminder), every mailbox
message under its own seq (gaps left by retention stay gaps, so agents'
cursors stay valid and the next message continues the sequence), the
outbox (live and final pushes with their states), every event stream with
its seqs and idempotency keys, Work items with their inputs, the observe
routers' cursors, and the retention and pending-by-kind indexes.

The source must not be served meanwhile: stop every vigil serve using it
first. A badger directory in use is refused; a JetStream source has no
lock, and a source that changes during the copy fails the verification.
The destination must hold nothing (a refusal names what it holds), unless
--resume, which finishes a copy that stopped half-way: records are
written by key, so those copied twice are the same. The copy goes in
batches (progress on stderr), then reads the destination back and checks
that every family holds the same records, byte for byte, as the source,
and prints a summary.

Exit codes:
  0   copied and verified
  1   the copy failed or did not verify (the message says what differs)
  64  usage: a bad flag, SRC or DST missing or not a store, the source in
      use or empty, or a destination that is not empty`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if from == "" || to == "" {
				return usagef("store copy: --from and --to are both needed")
			}
			nc.TLS = natsstore.TLS{CA: tlsCA, Cert: tlsCert, Key: tlsKey}
			src, err := openEnd(ctx, from, nc, true)
			if err != nil {
				return err
			}
			defer src.Close()
			dst, err := openEnd(ctx, to, nc, false)
			if err != nil {
				return err
			}
			defer dst.Close()
			fmt.Fprintf(stderr, "copying %s into %s\n", from, to)
			sum, err := storecopy.Copy(ctx, src, dst, storecopy.Options{Batch: batch, Resume: resume, Progress: stderr})
			if errors.Is(err, storecopy.ErrSourceEmpty) {
				return &usageError{fmt.Errorf("store copy: %s: %w", from, err)}
			}
			if errors.Is(err, storecopy.ErrNotEmpty) {
				return &usageError{fmt.Errorf("store copy: %s: %w (use --resume to finish a copy that stopped)", to, err)}
			}
			if err != nil {
				return err
			}
			if err := dst.Close(); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "copied and verified %d records: %s\n", sum.Copied.Total(), sum.Copied)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the source: a badger directory or nats://host:port[,...]")
	f.StringVar(&to, "to", "", "the destination: a badger directory or nats://host:port[,...]")
	f.BoolVar(&resume, "resume", false, "copy into a destination that holds records of an earlier, interrupted copy")
	f.IntVar(&batch, "batch", storecopy.DefaultBatch, "records per write")
	f.StringVar(&nc.CredsFile, "creds", "", "NATS credentials file")
	f.StringVar(&tlsCA, "tls-ca", "", "CA certificate to verify the NATS servers")
	f.StringVar(&tlsCert, "tls-cert", "", "client certificate for NATS")
	f.StringVar(&tlsKey, "tls-key", "", "client certificate's key")
	f.IntVar(&nc.Replicas, "replicas", 0, "JetStream replicas of a bucket the copy creates (1, 3 or 5; 0: 1, or what an existing bucket has)")
	f.IntVar(&nc.Partitions, "partitions", 0, "partitions of a bucket the copy creates (0: the default, or what an existing bucket has)")
	f.StringVar(&nc.Bucket, "bucket", "", "the JetStream key-value bucket (default "+natsstore.DefaultBucket+")")
	return cmd
}

// badgerDir is where the badger store of the data directory dir is, as
// vigil serve --data dir keeps it: dir/store. A source may also name the
// store directory itself (one holding badger's MANIFEST); a source that
// is neither is a usage error.
func badgerDir(dir string, source bool) (string, error) {
	inside := filepath.Join(dir, "store")
	if !source {
		return inside, nil
	}
	for _, d := range []string{inside, dir} {
		if _, err := os.Stat(filepath.Join(d, "MANIFEST")); err == nil {
			return d, nil
		}
	}
	return "", usagef("store copy: %s is not a data directory with a badger store (no %s nor %s)", dir,
		filepath.Join(inside, "MANIFEST"), filepath.Join(dir, "MANIFEST"))
}

// openEnd opens a side of a copy: a nats:// list, or a data directory's
// badger store (a source must already be a store: opening creates one).
func openEnd(ctx context.Context, at string, nc natsstore.Config, source bool) (storeEnd, error) {
	if strings.HasPrefix(at, "nats://") || strings.HasPrefix(at, "tls://") {
		nc.URLs = strings.Split(at, ",")
		nc.Existing = source
		s, err := natsstore.OpenStore(ctx, nc)
		if errors.Is(err, natsstore.ErrBadConfig) || errors.Is(err, natsstore.ErrMismatch) || errors.Is(err, natsstore.ErrNoBucket) {
			return nil, &usageError{fmt.Errorf("store copy: %s: %w", at, err)}
		}
		if err != nil {
			return nil, fmt.Errorf("store copy: %s: %w", at, err)
		}
		return s, nil
	}
	dir, err := badgerDir(at, source)
	if err != nil {
		return nil, err
	}
	s, err := badger.OpenStore(dir, badger.Options{SyncWrites: !source})
	switch {
	case errors.Is(err, store.ErrInUse):
		return nil, &usageError{fmt.Errorf("store copy: %w", err)}
	case err != nil:
		return nil, fmt.Errorf("store copy: %w", err)
	}
	return s, nil
}
