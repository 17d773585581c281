package clock

import (
	"context"
	"testing"
	"time"
)

// The wall clock's Sleep ends with its context, its timers fire, and a
// nil Clock is the wall clock.
func TestWall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Wall{}).Sleep(ctx, time.Hour); err != context.Canceled {
		t.Fatalf("Sleep with an ended context: %v", err)
	}
	if err := (Wall{}).Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	tm := Wall{}.NewTimer(time.Millisecond)
	<-tm.C()
	ran := make(chan struct{})
	Wall{}.AfterFunc(time.Millisecond, func() { close(ran) })
	<-ran
	if _, ok := Or(nil).(Wall); !ok {
		t.Fatal("Or(nil) is not the wall clock")
	}
}
