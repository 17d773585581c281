package watchwait

import (
	"errors"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/store"
)

func id(b byte) store.ID { return store.ID{b} }

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestChangedWakesOnlyThatWatch(t *testing.T) {
	n := New(0)
	a1, ra1, _ := n.Wait(id(1))
	a2, ra2, _ := n.Wait(id(1))
	b, rb, _ := n.Wait(id(2))
	defer ra1()
	defer ra2()
	defer rb()
	n.Changed(id(1))
	if !closed(a1) || !closed(a2) {
		t.Fatal("a change did not wake every waiter on its watch")
	}
	if closed(b) {
		t.Fatal("a change woke a waiter on another watch")
	}
	// The next waiter on 1 waits for the next change.
	a3, ra3, _ := n.Wait(id(1))
	defer ra3()
	if closed(a3) {
		t.Fatal("a waiter after the change was woken by it")
	}
}

func TestWaitBeforeReadMissesNothing(t *testing.T) {
	n := New(0)
	ch, release, _ := n.Wait(id(1))
	defer release()
	n.Changed(id(1)) // lands between the waiter's read and its wait
	if !closed(ch) {
		t.Fatal("a change after Wait and before the select was missed")
	}
}

func TestBoundRefusesAndReleaseFrees(t *testing.T) {
	n := New(2)
	_, r1, err1 := n.Wait(id(1))
	_, r2, err2 := n.Wait(id(2))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if _, _, err := n.Wait(id(3)); !errors.Is(err, ErrTooManyWaiters) {
		t.Fatalf("a waiter past the bound: %v, want ErrTooManyWaiters", err)
	}
	r1()
	r1() // twice is once
	if n.Waiters() != 1 {
		t.Fatalf("waiters = %d after one release (twice), want 1", n.Waiters())
	}
	_, r3, err := n.Wait(id(3))
	if err != nil {
		t.Fatalf("a waiter after a release: %v", err)
	}
	r2()
	r3()
	if n.Waiters() != 0 || n.watches() != 0 {
		t.Fatalf("after every release: %d waiters on %d watches, want none", n.Waiters(), n.watches())
	}
}

func TestReleaseAfterChangeKeepsTheNewSlot(t *testing.T) {
	n := New(0)
	_, old, _ := n.Wait(id(1))
	n.Changed(id(1))
	ch, cur, _ := n.Wait(id(1))
	old() // the woken waiter leaves after the next one came
	n.Changed(id(1))
	if !closed(ch) {
		t.Fatal("releasing a woken waiter dropped the next waiter's channel")
	}
	cur()
	if n.watches() != 0 || n.Waiters() != 0 {
		t.Fatalf("%d watches, %d waiters left", n.watches(), n.Waiters())
	}
}

// Many waiters and changers at once: every waiter is woken by a change
// after its Wait, and nothing is left behind.
func TestHammer(t *testing.T) {
	n := New(0)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			for range 200 {
				ch, release, err := n.Wait(id(byte(i % 4)))
				if err != nil {
					t.Error(err)
					return
				}
				n.Changed(id(byte(i % 4)))
				<-ch
				release()
			}
		})
	}
	wg.Wait()
	if n.watches() != 0 || n.Waiters() != 0 {
		t.Fatalf("%d watches, %d waiters left", n.watches(), n.Waiters())
	}
}

// What a probe pays for the notifier: Changed on a watch nobody waits on,
// beside a thousand waiters on other watches.
func BenchmarkChangedUnwatched(b *testing.B) {
	n := New(0)
	for i := range 1000 {
		_, release, _ := n.Wait(store.ID{1, byte(i), byte(i >> 8)})
		defer release()
	}
	b.ResetTimer()
	for range b.N {
		n.Changed(id(0))
	}
}
