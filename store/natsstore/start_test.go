package natsstore

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/syncbuf"
)

// TestOpenWaitsForAMetaLeader: one server of three is up, so JetStream
// has no meta leader and answers nothing; Open says so and waits, and
// once the other two have started (during its first wait) it creates
// the R3 bucket and opens.
func TestOpenWaitsForAMetaLeader(t *testing.T) {
	f := natstest.Form(t, 3)
	f.Start(0)
	clock := fakeclock.At(t0).AdvanceOnSleep()
	clock.OnSleep(func(n int) {
		if n == 1 {
			f.Start(1)
			f.Start(2)
		}
	})
	var logs syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // the test's own bound, not a wait
	defer cancel()
	s, err := Open(ctx, Config{URLs: strings.Split(f.URLs(), ","), Replicas: 3, Timeout: time.Second,
		StartTimeout: 24 * time.Hour, Clock: clock, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("Open while the cluster formed: %v\n%s", err, logs.String())
	}
	defer s.Close()
	if s.Replicas() != 3 {
		t.Errorf("replicas %d, want 3", s.Replicas())
	}
	if len(clock.Sleeps()) == 0 {
		t.Fatal("Open never waited")
	}
	if !strings.Contains(logs.String(), "waiting for JetStream: no meta leader yet (attempt 1)") {
		t.Errorf("no progress line for the first attempt:\n%s", logs.String())
	}
	if _, err := s.last(ctx, metaKey); err != nil {
		t.Errorf("the store it opened: %v", err)
	}
}

// TestOpenGivesUpAtTheStartTimeout: with one server of three up for
// good, Open waits 250 ms, 500 ms, 1 s, then what is left of a 3 s start
// timeout, and fails with ErrStartTimeout naming the setting, after
// five attempts and four progress lines.
func TestOpenGivesUpAtTheStartTimeout(t *testing.T) {
	f := natstest.Form(t, 3)
	f.Start(0)
	clock := fakeclock.At(t0).AdvanceOnSleep()
	var logs syncbuf.Buffer
	_, err := Open(context.Background(), Config{URLs: strings.Split(f.URLs(), ","), Replicas: 3, Timeout: 200 * time.Millisecond,
		StartTimeout: 3 * time.Second, Clock: clock, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if !errors.Is(err, ErrStartTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Open against a cluster without a meta leader: %v, want ErrStartTimeout wrapping the request's timeout", err)
	}
	for _, want := range []string{"store.nats.start_timeout 3s", "5 attempts"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 1250 * time.Millisecond}
	if got := clock.Sleeps(); !slices.Equal(got, want) {
		t.Errorf("waited %v, want %v", got, want)
	}
	if n := strings.Count(logs.String(), "waiting for JetStream: no meta leader yet"); n != 4 {
		t.Errorf("%d progress lines, want 4:\n%s", n, logs.String())
	}
}

// TestOpenDoesNotWaitOnARefusal: an answer that refuses (a stored
// partition count other than the configuration's) fails Open at once,
// without a wait: only silence is waited on.
func TestOpenDoesNotWaitOnARefusal(t *testing.T) {
	srv := runServer(t)
	openStore(t, Config{Partitions: 8}, srv)
	clock := fakeclock.At(t0).AdvanceOnSleep()
	_, err := Open(context.Background(), Config{URLs: []string{srv.ClientURL()}, Partitions: 16, Clock: clock})
	if !errors.Is(err, ErrMismatch) || errors.Is(err, ErrStartTimeout) {
		t.Fatalf("Open with another partition count: %v, want the mismatch alone", err)
	}
	if got := clock.Sleeps(); len(got) != 0 {
		t.Errorf("Open waited %v before refusing", got)
	}
	if _, err := Open(context.Background(), Config{URLs: []string{srv.ClientURL()}, StartTimeout: -time.Second}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("a negative start timeout: %v, want ErrBadConfig", err)
	}
}

// TestOpenWaitsForTheFirstServer: no server of three is up yet, so the
// connection itself is refused; Open waits as for a meta leader, and
// opens once all three have started (during its first wait).
func TestOpenWaitsForTheFirstServer(t *testing.T) {
	f := natstest.Form(t, 3)
	clock := fakeclock.At(t0).AdvanceOnSleep()
	clock.OnSleep(func(n int) {
		if n == 1 {
			for i := range 3 {
				f.Start(i)
			}
		}
	})
	var logs syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // the test's own bound, not a wait
	defer cancel()
	s, err := Open(ctx, Config{URLs: strings.Split(f.URLs(), ","), Replicas: 3, Timeout: time.Second,
		StartTimeout: 24 * time.Hour, Clock: clock, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("Open while no server was up: %v\n%s", err, logs.String())
	}
	defer s.Close()
	if !strings.Contains(logs.String(), "waiting for JetStream: no server reachable (attempt 1)") || !strings.Contains(logs.String(), "no servers available") {
		t.Errorf("the first attempt's line does not say no server answered:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "no meta leader yet (attempt 1)") {
		t.Errorf("a refused connection was logged as a missing meta leader:\n%s", logs.String())
	}
}

// TestOpenGivesUpOnUnreachableServers: no server is reachable for good
// (a wrong address), so Open fails at the start timeout with
// ErrStartTimeout telling the operator to check the servers can be
// reached, not that a meta leader is missing.
func TestOpenGivesUpOnUnreachableServers(t *testing.T) {
	f := natstest.Form(t, 1)
	clock := fakeclock.At(t0).AdvanceOnSleep()
	_, err := Open(context.Background(), Config{URLs: strings.Split(f.URLs(), ","), Timeout: 200 * time.Millisecond,
		StartTimeout: time.Second, Clock: clock})
	if !errors.Is(err, ErrStartTimeout) {
		t.Fatalf("Open with no server up: %v, want ErrStartTimeout", err)
	}
	if !strings.Contains(err.Error(), "can reach them") || strings.Contains(err.Error(), "meta leader") {
		t.Errorf("the error %q does not say to check that the servers can be reached", err)
	}
}

// TestOpenExistingCreatesNothing: with Config.Existing a bucket that is
// not there is ErrNoBucket, at once and without creating it; one that is
// there opens.
func TestOpenExistingCreatesNothing(t *testing.T) {
	srv := runServer(t)
	clock := fakeclock.At(t0).AdvanceOnSleep()
	_, err := Open(context.Background(), Config{URLs: []string{srv.ClientURL()}, Bucket: "typo", Existing: true, Clock: clock})
	if !errors.Is(err, ErrNoBucket) {
		t.Fatalf("Open of a missing bucket: %v, want ErrNoBucket", err)
	}
	if got := clock.Sleeps(); len(got) != 0 {
		t.Errorf("Open waited %v before refusing", got)
	}
	_, js := natstest.Connect(t, srv)
	if _, err := js.Stream(context.Background(), "KV_typo"); err == nil {
		t.Fatal("the missing bucket was created")
	}
	openStore(t, Config{Bucket: "there"}, srv)
	s, err := Open(context.Background(), Config{URLs: []string{srv.ClientURL()}, Bucket: "there", Existing: true})
	if err != nil {
		t.Fatalf("Open of a bucket that is there: %v", err)
	}
	_ = s.Close()
}
