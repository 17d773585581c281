// Package core is the composition root of the host's core: the store, the
// kind registry (with the host's phase reminder kind in it, whose watches
// the recipients keep), delivery with its outbox, the scheduler and the
// recipients, built in one place and in one order, with the goroutines
// they own started and stopped here. `vigil serve` builds it through
// package host (which adds the plugin runtime, fetch, exec, observe and
// the API); the tests' stack (internal/apitest) builds it directly, with
// fakes for the kinds and the clock, so a test runs the same wiring as the
// product.
//
// The storage seam is here. The core holds its backend as a Store (store.go),
// the union of what the components use of it, each through the small
// interface it declares where it uses it (scheduler.Store, delivery.Store
// and OutboxStore, recipients.Store and PhaseStore, observe.Store,
// fetch.EventLog, upkeep.Store, metrics.StateCounter, httpapi.Watches):
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
// and Join (called by the host once its plugins are loaded, since the
// node publishes their digest) follows the pending index, so a watch
// registered elsewhere in a partition this node holds is armed at once;
// runs the lease loop; arms a gained partition and forgets a lost one on
// a goroutine of its own, in order per partition (arming reads the store,
// and the lease loop must not wait on it); and runs the cluster-wide jobs
// it is given (the observe router, the upkeep) only while it holds their
// leases, stopping one before its lease can pass to another node; and
// tells of appends to the event streams it is asked to follow, so the
// router hears of items recorded on other nodes. A partition's lease is
// also the push partition's (store.PushPartition): the outbox sends only
// the pushes of recipients in the partitions the node holds, hears of
// each push through the store's outbox feed (settling hands it nothing
// on a cluster: the feed is in commit order, so mailbox order, whichever
// node settled), claims a partition's pushes and lets go of them as the
// lease loop gains and loses the lease (before it is released), and loads
// a gained partition's pushes after its watches, in the queue. Close
// leaves the cluster before it closes the store. Rejected: one Gain per
// lease on a goroutine each, which could arm a partition after its loss
// was handled.
//
// What it must never do: decide anything (each component owns its rules),
// or start a goroutine it does not stop in Close.
//
// It is its own package, below host, because observe's tests build the
// core and host imports observe: one package would be an import cycle.
// Rejected: each caller wiring the components itself, as serve and the
// tests' stack each did, which let the two drift (the runtime's logger was
// wired in neither; the outbox had to be added to both).
package core
