package core

import (
	"context"

	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// The store the core is composed over is package store's (*store.Store):
// every record and transition written once over an adapter of its
// key-value seam, badger by default (OpenBadger), a cluster's on
// JetStream (cluster.go). Each component takes it through the small
// interface it declares where it uses it; the composition roots (here
// and host) are where the one concrete store meets them.

// OpenBadger is the default store: the badger store in dir.
func OpenBadger(dir string, opt badger.Options) func(context.Context) (*store.Store, error) {
	return func(context.Context) (*store.Store, error) { return badger.OpenStore(dir, opt) }
}
