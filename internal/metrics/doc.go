// Package metrics is vigil's Prometheus instrumentation: one registry per
// process, fed by small interfaces the host's packages already call
// (plugin calls, probes and their lag, the ready queue's depth,
// deliveries, fetches), a collector that counts watches by state at
// scrape time, one that reads the store's disk (free, reserve, needed,
// read-only) for a store that measures it, and, on a node of a cluster only (Metrics.Cluster), its
// leases held, moved and renewed. Its in-memory instruments are
// registered a second time in a registry of their own that the API's
// overview reads (views.go): gathering it never calls the collector that
// counts watches by walking
// the state index.
//
// It owns the metric names and labels. It must never be a dependency of
// the packages it measures: each declares the interface it calls, and this
// package satisfies them, so a test of the scheduler needs no Prometheus.
// Rejected alternative: prometheus' global default registry, which is
// package-level mutable state shared by every test in a binary.
package metrics
