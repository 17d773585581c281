// Package core is the composition root of the host's core: the store, the
// kind registry (with the host's phase reminder kind in it, whose watches
// the recipients keep), delivery with its outbox, the scheduler and the
// recipients, built in one place and in one order (New starts nothing),
// with the goroutines they own run by Run. `vigil serve` builds it through
// package host (which adds the plugin runtime, fetch, exec, observe and
// the API); the tests' stack (internal/apitest) builds it directly, with
// fakes for the kinds and the clock, so a test runs the same wiring as the
// product.
//
// The storage seam is here. The core holds its backend as a Store (store.go),
// the union of what the components use of it, each through the small
// interface it declares where it uses it (scheduler.Store, delivery.Store
// and OutboxStore, recipients.Store and PhaseStore, observe.Store,
// fetch.EventLog, upkeep.Store, metrics.StateCounter, httpapi.Watches and
// IdemReader):
// no component names a backend. Config.OpenStore chooses the backend;
// without it the core opens badger in StoreDir (OpenBadger). A backend is
// fit to be returned there when it passes store/storetest, the suite that
// pins what the components rely on (conditional transitions, the pending
// schedule, mailbox sequences and cursors, held-aside rows, events
// idempotent by key, Work routing, retention).
//
// On a cluster (Config.Cluster, cluster.go) the backend is the
// ClusterStore Cluster.Open returns (serve opens store/natsstore; the core
// does not import it, since natsstore's imports reach observe, whose tests
// build the core) and the core is also a node: the leases bucket is
// opened on the store's connection, the scheduler's Ownership is the node's partition leases,
// each fenced in the store (a gained partition's epoch is written,
// ClusterStore.FencePartition, before the scheduler holds it or arms any
// of its watches, and a lost one let go, Unfence, as the lease loop tells
// of the loss), so a stale owner's write of a partition's row is refused
// as store.ErrNotOwner once another node has gained it, and Join (called by the host once its plugins are loaded, since the
// node publishes their digest) follows the pending index, so a watch
// registered elsewhere in a partition this node holds is armed at once;
// runs the lease loop; arms a gained partition and forgets a lost one on
// a goroutine of its own, in order per partition (arming reads the store,
// and the lease loop must not wait on it); and runs the cluster-wide jobs
// it is given (the observe router, the upkeep) only while it holds their
// leases, stopping one before its lease can pass to another node; and
// tells of appends to the event streams it is asked to follow, so the
// router hears of items recorded on other nodes; shares what only a
// watch's owner holds in memory (probes.go, host/probeshare): Seen asks
// the partition's holder, within Cluster.AskTimeout, for a show on a node
// that does not own the watch, and every change the scheduler makes is
// published so a wait on another node wakes; and publishes the node's
// plugin set again after each reload (Join.PluginSet). While that set is
// not the cluster's the scheduler's Ownership refuses every registration
// (scheduler.Gate) as 503 plugin_set_mismatch, so REST, MCP and the CLI,
// which all register through the scheduler, refuse alike. A feed that
// stops with an error is subscribed to again with a backoff and what it
// missed is caught up (each held partition scanned again, the stream's follower
// called): a feed tells only of what happens while it is subscribed. The
// pass over every recipient that one host makes in Prime is on a cluster
// the core's own job (JobReconcile), run by one node at a time, since
// nodes starting together would each register the same missing standing
// watch. Run's node leaves the cluster once the scheduler's probes in
// flight have settled, before Run returns. Rejected:
// one Gain per lease on a goroutine each, which could arm a partition
// after its loss was handled; trusting the lease's TTL minus its margin
// without a fence, which a pause between the check and the write defeats; a feed that stops left stopped until the
// next ownership change, when a watch registered elsewhere meanwhile
// waits for it unprobed.
//
// A partition's lease is also the push partition's (store.PushPartition): the outbox sends only
// the pushes of recipients in the partitions the node holds, hears of
// each push through the store's outbox feed (settling hands it nothing
// on a cluster: the feed is in commit order, so mailbox order, whichever
// node settled), claims a partition's pushes and lets go of them as the
// lease loop gains and loses the lease (before it is released), and loads
// a gained partition's pushes after its watches, in the queue.
//
// What it must never do: decide anything (each component owns its rules),
// or start a goroutine outside Run.
//
// It is its own package, below host, because observe's tests build the
// core and host imports observe: one package would be an import cycle.
// Rejected: each caller wiring the components itself, as serve and the
// tests' stack each did, which let the two drift (the runtime's logger was
// wired in neither; the outbox had to be added to both).
package core
