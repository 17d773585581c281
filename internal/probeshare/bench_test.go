package probeshare

import (
	"context"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/store"
)

// What a probe's worker pays to tell the other nodes it changed a watch:
// building the subject and one publish onto the connection's buffer (the
// connection's own goroutine flushes it), with nobody subscribed.
//
//	go test -run XXX -bench Publish -benchmem ./internal/probeshare/
func BenchmarkPublish(b *testing.B) {
	srv := natstest.Start(b)
	nc, _ := natstest.Connect(b, srv)
	s := &Share{cfg: Config{Conn: nc}, changed: "vigil.vigil.changed.a."}
	id := store.ID{1, 2, 3}
	b.ReportAllocs()
	for b.Loop() {
		s.Publish(id)
	}
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
}

// A change's whole cost in one process, as on a two-node cluster: the
// publish, the sender reading its own message back and skipping it, and
// the other node reading it and waking its waiters (none wait). Every
// allocation of the process counts, the readers' included, as far as
// they kept up by the last flush.
func BenchmarkPublishHeard(b *testing.B) {
	srv := natstest.Start(b)
	run := func(node string, changed func(store.ID)) (*Share, *nats.Conn) {
		nc, _ := natstest.Connect(b, srv)
		s, err := Listen(Config{Conn: nc, Namespace: "vigil", Node: node, Seen: fakeSeer{}, Changed: changed})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { s.Run(ctx) })
		b.Cleanup(func() { cancel(); wg.Wait() })
		if err := nc.Flush(); err != nil {
			b.Fatal(err)
		}
		return s, nc
	}
	a, nc := run("a", func(store.ID) {})
	run("b", func(store.ID) {})
	id := store.ID{1, 2, 3}
	b.ReportAllocs()
	for b.Loop() {
		a.Publish(id)
	}
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
}
