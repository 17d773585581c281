// Package core is the composition root of the host's core: the store, the
// kind registry (with the host's phase reminder kind in it), delivery and
// its outbox, the scheduler and the recipients, built in one place and in
// one order (New starts nothing) and run by Run. `vigil serve` builds it
// through package host; the tests' stack (internal/apitest) builds it
// directly, so a test runs the same wiring as the product.
//
// What it owns:
//   - The store: package store's *store.Store, every transition written
//     once over an adapter of its key-value seam, opened by
//     Config.OpenStore (badger in StoreDir by default; on a cluster the
//     ClusterStore adapter Cluster.Open returns), each component holding
//     it through the small interface it declares.
//   - On a cluster (Config.Cluster, cluster.go) the node: the leases
//     bucket on the store's connection; the scheduler's Ownership, each
//     partition fenced in the store before it is held; Join, which
//     subscribes to the pending, outbox and event feeds and the probe news
//     (probes.go) so nothing committed after it goes untold; and, in Run,
//     the lease loop, partitions armed and dropped in order on one queue,
//     the cluster-wide jobs (the observe router, the upkeep, and the
//     core's own pass over every recipient) only while their leases are
//     held, and each feed followed again, and caught up, when it stops.
//   - Run: the outbox and the scheduler; on a cluster the node leaves
//     only after the scheduler's probes in flight have settled.
//
// What it must never do: decide anything (each component owns its rules),
// or start a goroutine outside Run.
//
// It is its own package, below host, because observe's tests build the
// core and host imports observe: one package would be an import cycle.
//
// Rejected: each caller wiring the components itself, as serve and the
// tests' stack each did, which let the two drift (the runtime's logger was
// wired in neither; the outbox had to be added to both).
package core
