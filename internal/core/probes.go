package core

import (
	"context"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/cluster"
	"github.com/vigilhq/vigil/internal/probeshare"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

// What only a watch's owner holds in memory (its probes so far, when the
// last began), on every node of a cluster: a show asks the partition's
// holder (Seen), and each change the owner's scheduler makes is told to
// every node, whose waiters it wakes (internal/probeshare).

// listenProbes subscribes the node to the probe news on the store's
// connection; runProbes serves it until ctx ends, then unsubscribes.
func (c *Core) listenProbes() (*probeshare.Share, error) {
	cl := c.cluster
	share, err := probeshare.Listen(probeshare.Config{
		Conn: cl.adapter.JetStream().Conn(), Namespace: cl.adapter.Bucket(), Node: cl.cfg.Node,
		Seen: c.Scheduler, Changed: c.Scheduler.Notify, Timeout: cl.cfg.AskTimeout, Logger: c.log,
		Poked: c.pokedByAnother,
	})
	if err != nil {
		return nil, err
	}
	cl.share.Store(share)
	return share, nil
}

func (c *Core) runProbes(ctx context.Context, share *probeshare.Share) {
	defer c.cluster.share.Store(nil)
	defer share.Close()
	_ = share.Run(ctx)
}

// pokeTimeout bounds the store read of a poke another node's event asked
// for.
const pokeTimeout = 10 * time.Second

// pokedByAnother pokes this node's watches of the keys another node's
// event named (the partitions this node holds).
func (c *Core) pokedByAnother(kind string, keys []string) {
	ctx, cancel := context.WithTimeout(context.Background(), pokeTimeout)
	defer cancel()
	if _, err := c.Scheduler.PokeKeys(ctx, kind, keys); err != nil {
		c.log.Warn("a poke another node's event asked for failed; the cadence stays the fallback", "kind", kind, "keys", len(keys), "err", err)
	}
}

// PokeKeys makes the pending watches of kind with one of keys due now
// (hooks.Poker): this node's, and on a cluster every other node's too
// (probeshare.PublishPoke), so the poke reaches the owner of each key's
// partition whichever node took the event. It answers how many this
// node woke.
func (c *Core) PokeKeys(ctx context.Context, kind string, keys []string) (int, error) {
	n, err := c.Scheduler.PokeKeys(ctx, kind, keys)
	if c.cluster != nil {
		if sh := c.cluster.share.Load(); sh != nil {
			sh.PublishPoke(kind, keys)
		}
	}
	return n, err
}

// publishChange is the scheduler's OnChange on a cluster: every change is
// told to the other nodes, which cannot be known not to wait on it.
func (cl *clustered) publishChange(id store.ID) {
	if sh := cl.share.Load(); sh != nil {
		sh.Publish(id)
	}
}

// Seen is what the owner of pending watch id holds in memory of its
// probes beyond its row, and whose answer it is (api.Watch.ProbesFrom).
// On one host it is the scheduler's, from "". On a cluster it is this
// node's scheduler's when the node holds the watch's partition, else the
// partition holder's, asked within Cluster.AskTimeout, from "owner"; with
// no holder, no answer in time, or an owner that does not hold the watch,
// ok is false and from is "store": the row's count stands.
func (c *Core) Seen(ctx context.Context, id store.ID) (seen scheduler.Seen, from string, ok bool) {
	cl := c.cluster
	if cl == nil {
		seen, ok = c.Scheduler.Seen(id)
		return seen, "", ok
	}
	if cl.own.Holds(id.Partition(cl.own.n)) {
		if seen, ok = c.Scheduler.Seen(id); ok {
			return seen, api.ProbesFromOwner, true
		}
		return seen, api.ProbesFromStore, false
	}
	node, share := cl.node.Load(), cl.share.Load()
	if node == nil || share == nil {
		return seen, api.ProbesFromStore, false
	}
	holder, held := node.HolderOf(cluster.PartitionLease(id.Partition(cl.own.n)))
	if !held || holder == node.Name() {
		// Vacant, or this node's own lease past its trust: nobody's
		// memory is to be had.
		return seen, api.ProbesFromStore, false
	}
	got, err := share.Ask(ctx, holder, []store.ID{id})
	if err != nil {
		c.log.Debug("cluster: the owner gave no probe count; showing the stored one", "watch", id, "owner", holder, "err", err)
		return seen, api.ProbesFromStore, false
	}
	if seen, ok = got[id]; ok {
		return seen, api.ProbesFromOwner, true
	}
	return seen, api.ProbesFromStore, false
}
