package natsstore

import (
	"github.com/nats-io/nats.go/jetstream"
)

// What a node of a cluster needs of its store beside the storage seam:
// the JetStream context its leases bucket opens on (one connection per
// node), one partition's pending schedule when the node takes that
// partition's lease, a feed of the rows that become pending anywhere,
// so the owner of a watch registered on another node arms it at once,
// and a feed of the outbox's pushes, so the owner of a recipient's pushes
// sends those another node's settlements wrote.

// JetStream is the store's JetStream context, on its connection: the
// cluster's leases bucket (internal/cluster) is opened on it, with the
// store's replica count, so a node holds one connection to the servers.
func (s *Store) JetStream() jetstream.JetStream { return s.js }

// Bucket is the store's bucket name, which names the cluster: a node's
// subjects beside the store (internal/probeshare) carry it, so two clusters
// sharing a NATS system do not hear each other.
func (s *Store) Bucket() string { return s.bucket }
