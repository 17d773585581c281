package api

import (
	"encoding/json"
	"time"
)

// Overview is GET /api/v1/overview: what the host already counts, for an
// operator's first look. Nothing in it walks the watch rows per request:
// the counts by state are the state index's, at most MaxAge old.
type Overview struct {
	At time.Time `json:"at"`
	// Watches counts the rows by state (every state, zeros included),
	// counted at WatchesCountedAt.
	Watches map[string]int `json:"watches"`
	// PendingByKind counts the pending rows by kind (a kind with none
	// absent), counted with Watches.
	PendingByKind    map[string]int `json:"pending_by_kind"`
	WatchesCountedAt time.Time      `json:"watches_counted_at"`
	Scheduler        SchedulerView  `json:"scheduler"`
	Kinds            []KindView     `json:"kinds"`
	Pushes           PushView       `json:"pushes"`
	// DeadLetters is how many fetch dead letters were ever written (the
	// stream's last sequence number; pruned ones included).
	DeadLetters uint64 `json:"dead_letters"`
	// Storage is the store's disk, where the backend measures one (the
	// embedded store; absent on a JetStream cluster, whose servers keep
	// their own disks).
	Storage *StorageView `json:"storage,omitempty"`
}

// StorageView is the data directory's free space in an Overview.
type StorageView struct {
	// Dir is the store's data directory.
	Dir string `json:"dir"`
	// FreeBytes is what its filesystem has free.
	FreeBytes int64 `json:"free_bytes"`
	// ReserveBytes is what the store may still write on its own (its
	// logs' flushes, its compactions); NeededBytes the free space under
	// which writes from clients are refused (the reserve and a margin).
	ReserveBytes int64 `json:"reserve_bytes"`
	NeededBytes  int64 `json:"needed_bytes"`
	// ReadOnly is set while writes from clients are refused (507
	// insufficient_storage) for want of space; reads go on, and writes
	// resume without a restart once FreeBytes is over NeededBytes.
	ReadOnly bool `json:"read_only"`
	// MeasuredAt is when the free space was measured.
	MeasuredAt time.Time `json:"measured_at"`
}

// SchedulerView is the scheduler's state in an Overview.
type SchedulerView struct {
	// Armed is how many pending watches the scheduler holds in memory.
	Armed int `json:"armed"`
	// Ready is the ready queue's depth: due watches waiting for a worker.
	Ready int `json:"ready"`
	// NextWake is when the scheduler next wakes, if anything is armed.
	NextWake *time.Time `json:"next_wake,omitempty"`
	// LagP50Seconds and LagP99Seconds bound how late probes started after
	// their due time, over every kind since the host started (a
	// histogram bucket's upper bound; 0 before the first probe).
	LagP50Seconds float64 `json:"lag_p50_seconds"`
	LagP99Seconds float64 `json:"lag_p99_seconds"`
}

// KindView is one kind's counters since the host started.
type KindView struct {
	Kind string `json:"kind"`
	// Probes counts probes by result (pending, settled, changed, expired,
	// unwatchable, fault, error).
	Probes map[string]uint64 `json:"probes"`
	// Faults counts plugin calls without a usable answer, by reason.
	Faults map[string]uint64 `json:"faults"`
	// Calls is how many observe calls the kind's plugin answered or
	// faulted; CallMeanSeconds their mean and CallP99Seconds a bucket's
	// upper bound over 99 % of them.
	Calls           uint64  `json:"calls"`
	CallMeanSeconds float64 `json:"call_mean_seconds"`
	CallP99Seconds  float64 `json:"call_p99_seconds"`
	LagP99Seconds   float64 `json:"lag_p99_seconds"`
}

// PushView is the webhook outbox in an Overview.
type PushView struct {
	// Queued is how many pushes the outbox holds now (first attempts,
	// retries waiting and in flight); Retrying how many of them wait for
	// a retry.
	Queued   int `json:"queued"`
	Retrying int `json:"retrying"`
	// Entered counts pushes entering each state since the host started
	// (pending, sending, retrying, delivered, failed, unknown).
	Entered map[string]uint64 `json:"entered"`
}

// Cluster is GET /api/v1/cluster: the nodes serving this API and the
// partitions each owns.
type Cluster struct {
	// Mode is "single" (one host owns every watch, recipient and stream)
	// or "cluster" (nodes sharing a JetStream cluster hold the partitions
	// and the cluster-wide jobs through leases).
	Mode  string        `json:"mode"`
	Nodes []ClusterNode `json:"nodes"`
	// Partitions is empty ([], never null) on a single host: it owns
	// everything. On a cluster, every partition with its owner (empty
	// while nobody holds it) and when the owner last renewed its lease.
	Partitions []ClusterPartition `json:"partitions"`
	// Jobs are the cluster-wide jobs (the observe router, the retention
	// upkeep), each with the node that runs it; on a cluster only.
	Jobs []ClusterPartition `json:"jobs,omitempty"`
	Note string             `json:"note,omitempty"`
}

// ClusterNode is one node of a Cluster.
type ClusterNode struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	StartedAt time.Time `json:"started_at"`
	Address   string    `json:"address"`
	// PluginSetDigest is the SHA-256, in hex, of the node's kinds as
	// sorted lines "kind version sha256\n": two nodes with the same digest
	// serve the same plugins.
	PluginSetDigest string `json:"plugin_set_digest"`
	Self            bool   `json:"self"`
	// Seen is when the node last renewed its presence, by the JetStream
	// servers' clock; on a cluster only.
	Seen *time.Time `json:"seen,omitempty"`
	// Refused: the node's plugin set differs from the cluster's, so it
	// holds no partition (it still serves the API).
	Refused bool `json:"refused,omitempty"`
}

// ClusterPartition is a share of the keyspace (or a cluster-wide job) and
// the node that owns it.
type ClusterPartition struct {
	ID    string `json:"id"`
	Owner string `json:"owner"`
	// RenewedAt is when the owner last renewed its lease, by the servers'
	// clock; on a cluster only, absent while nobody holds it.
	RenewedAt *time.Time `json:"renewed_at,omitempty"`
}

// RecipientList is GET /api/v1/recipients.
type RecipientList struct {
	Recipients []ListedRecipient `json:"recipients"`
}

// ListedRecipient is a recipient with how many pending watches it has:
// what pausing or stopping it would cancel.
type ListedRecipient struct {
	Recipient
	Pending int `json:"pending"`
	// PendingCapped: Pending is the recipient bound, and there may be
	// more.
	PendingCapped bool `json:"pending_capped,omitempty"`
}

// PluginDetail is GET /api/v1/plugins/{kind}: a kind as its plugin
// described it, with what its registry entry grants.
type PluginDetail struct {
	Kind         string          `json:"kind"`
	Version      string          `json:"version"`
	Summary      string          `json:"summary"`
	File         string          `json:"file"`
	SHA256       string          `json:"sha256"`
	Standing     bool            `json:"standing"`
	Pushed       bool            `json:"pushed"`
	Wakes        bool            `json:"wakes,omitempty"`
	DefaultEvery string          `json:"default_every"`
	Capabilities []string        `json:"capabilities"`
	Grants       json.RawMessage `json:"grants"`
	Observable   bool            `json:"observable"`
	Setting      string          `json:"setting,omitempty"`
	ParamsSchema json.RawMessage `json:"params_schema"`
	Example      json.RawMessage `json:"example,omitempty"`
}

// ScopeList is GET /api/v1/scopes: the observe scopes in force.
type ScopeList struct {
	Scopes []ScopeView `json:"scopes"`
}

// ScopeView is one observe scope: its declared sources and whether the
// principal may list its Work.
type ScopeView struct {
	Name    string       `json:"name"`
	Sources []SourceView `json:"sources"`
	// MayRead: the principal may list and read the scope's Work.
	MayRead bool `json:"may_read"`
}

// SourceView is a declared source of a scope; Routed, when a route takes
// its threads into Work.
type SourceView struct {
	Name   string `json:"name"`
	Routed bool   `json:"routed"`
}
