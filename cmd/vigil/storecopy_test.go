package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// `vigil store copy` moves a badger store into JetStream and back; the
// mailbox and its seqs come out as they went in.
func TestStoreCopyBothWays(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// src is serve's data directory: its store is src/store.
	src := t.TempDir()
	s, err := badger.OpenStore(filepath.Join(src, "store"), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PutRecipient(ctx, store.RecipientRecord{ID: "a", Status: store.StatusRunning, CreatedAt: at, UpdatedAt: at}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, _, err := s.AppendIfRunning(ctx, "a", store.Message{ID: store.ID{byte(i + 1)}, Kind: "note", Type: store.MessageFired, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	// The source is in use while the test holds it open.
	srv := natstest.Start(t)
	url := srv.ClientURL()
	_, stderr, err := run(t, ctx, "store", "copy", "--from", src, "--to", url)
	if exitCode(err) != ExitUsage || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("copying a store in use: %v (exit %d) %s", err, exitCode(err), stderr)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := run(t, ctx, "store", "copy", "--from", src, "--to", url, "--bucket", "moved")
	if err != nil || !strings.Contains(stdout, "copied and verified 8 records") || !strings.Contains(stderr, "copied 8/8 records") {
		t.Fatalf("dir→nats: %v\n%s\n%s", err, stdout, stderr)
	}
	// Again into the same bucket: refused, naming what it holds.
	_, _, err = run(t, ctx, "store", "copy", "--from", src, "--to", url, "--bucket", "moved")
	if exitCode(err) != ExitUsage || !strings.Contains(err.Error(), "mailbox_messages 3") {
		t.Fatalf("a copy into a non-empty bucket: %v (exit %d)", err, exitCode(err))
	}
	back := t.TempDir()
	if stdout, stderr, err = run(t, ctx, "store", "copy", "--from", url, "--bucket", "moved", "--to", back); err != nil {
		t.Fatalf("nats→dir: %v\n%s\n%s", err, stdout, stderr)
	}
	// What vigil serve --data back would open.
	b, err := badger.OpenStore(filepath.Join(back, "store"), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	msgs, err := b.ReadMailbox(ctx, "a", 1, 10)
	if err != nil || len(msgs) != 2 || msgs[0].Seq != 2 || msgs[0].ID != (store.ID{2}) {
		t.Fatalf("the copied mailbox after seq 1: %+v %v", msgs, err)
	}
	if m, _, err := b.AppendIfRunning(ctx, "a", store.Message{ID: store.ID{9}, Kind: "note", Type: store.MessageFired, At: at}); err != nil || m.Seq != 4 {
		t.Fatalf("the next message: %d %v, want seq 4", m.Seq, err)
	}
	// The store directory itself is a source too.
	if _, _, err := run(t, ctx, "store", "copy", "--from", filepath.Join(src, "store"), "--to", url, "--bucket", "again"); err != nil {
		t.Fatalf("copying from the store directory itself: %v", err)
	}
	// A directory that is no store is refused as a source.
	if _, _, err := run(t, ctx, "store", "copy", "--from", t.TempDir(), "--to", url); exitCode(err) != ExitUsage {
		t.Fatalf("copying from an empty directory: %v", err)
	}
	// A bucket that is not there (a wrong name) is refused as a source,
	// and not created: a copy into that name afterwards starts afresh.
	if _, _, err := run(t, ctx, "store", "copy", "--from", url, "--bucket", "typo", "--to", t.TempDir()); exitCode(err) != ExitUsage || !strings.Contains(err.Error(), "no such bucket: typo") {
		t.Fatalf("copying from a missing bucket: %v", err)
	}
	if _, _, err := run(t, ctx, "store", "copy", "--from", src, "--to", url, "--bucket", "typo", "--partitions", "16"); err != nil {
		t.Fatalf("copying into the name a source was asked for under: %v", err)
	}
	if _, _, err := run(t, ctx, "store", "copy", "--from", src); exitCode(err) != ExitUsage {
		t.Fatalf("no --to: %v", err)
	}
}
