// Package failovertest measures a cluster's failover: the time from a
// vigil node's SIGKILL to the first of its watches fired by another node.
// Its one test builds the real vigil, starts one JetStream server (three
// with VIGIL_FAILOVER_SERVERS=3, the bucket then R3) embedded in the test
// process on 127.0.0.1, runs two `vigil serve --store nats://…` processes
// (nodes a and b) on it, and in each of VIGIL_FAILOVER_RUNS runs
// registers timers due a moment later through a, kills a with SIGKILL
// once it holds some of their partitions, and long-polls b's mailbox
// until b fires the first of a's; then it restarts a and waits for the
// partitions to split again. It logs each run and the min, median and
// max, with the lease TTL (VIGIL_FAILOVER_TTL, serve's default 10s).
// docs/BENCHMARKS.md reports its figures; `just bench-failover` runs it.
//
// It runs only when VIGIL_FAILOVER_RUNS is set (and never under -short):
// each run waits out a lease TTL, so it does not belong in go test ./...
// or CI.
//
// What it must never do: reach into the host (it talks HTTP to the
// binaries, as an operator's client would, and shares the API's wire
// types and the store's id, whose partition it reads), listen anywhere
// but 127.0.0.1, or leave a process behind (each start is killed in
// t.Cleanup).
//
// Rejected alternative: two cores in the test process (internal/core's
// cluster tests), stopped by cancelling their context. A cancelled node
// leaves the cluster, deleting its leases, so the other takes over at
// once; only a process killed from outside leaves its leases to expire,
// which is the time an operator sees.
package failovertest
