package delivery

import (
	"context"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// fakeWaiterStore is badger with a MailboxWaiter that returns when the
// test says another process appended.
type fakeWaiterStore struct {
	*store.Store
	waiting  chan struct{} // a WaitMailbox started
	appended chan struct{} // the test's "another process appended"
}

func (f *fakeWaiterStore) WaitMailbox(ctx context.Context, rid string, after uint64) error {
	f.waiting <- struct{}{}
	select {
	case <-f.appended:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A long poll wakes on an append another process made, told by the
// backend's MailboxWaiter, though this process's hub heard of nothing.
func TestLongPollWakesOnAnAppendElsewhere(t *testing.T) {
	st := openStore(t)
	recipient(t, st, "a", store.StatusRunning, "")
	f := &fakeWaiterStore{Store: st, waiting: make(chan struct{}, 1), appended: make(chan struct{})}
	d := newDelivery(t, f, nil)
	// The other process: a delivery of its own over the same rows.
	other := newDelivery(t, st, nil)
	got := make(chan []store.Message, 1)
	go func() {
		msgs, _ := d.Read(context.Background(), "a", 0, 10, 30*time.Second)
		got <- msgs
	}()
	select {
	case <-f.waiting:
	case <-time.After(20 * time.Second):
		t.Fatal("the long poll never waited through the store")
	}
	mail(t, other, st, "a")
	close(f.appended)
	select {
	case msgs := <-got:
		if len(msgs) != 1 || msgs[0].Seq != 1 {
			t.Fatalf("woke with %+v", msgs)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the long poll did not wake on an append elsewhere")
	}
}
