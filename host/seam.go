package host

import (
	"github.com/vigilhq/vigil/host/fetch"
	"github.com/vigilhq/vigil/host/httpapi"
	"github.com/vigilhq/vigil/host/metrics"
	"github.com/vigilhq/vigil/host/observe"
	"github.com/vigilhq/vigil/host/upkeep"
	"github.com/vigilhq/vigil/store"
)

// The store covers what every component host builds over it uses of
// it, each through the interface that component declares; on a cluster
// the upkeep takes it with its feeds.
var (
	_ observe.Store        = (*store.Store)(nil)
	_ fetch.EventLog       = (*store.Store)(nil)
	_ fetch.EventReader    = (*store.Store)(nil)
	_ upkeep.Store         = (*store.Store)(nil)
	_ upkeep.Follower      = store.Feeds{}
	_ metrics.StateCounter = (*store.Store)(nil)
	_ httpapi.Watches      = (*store.Store)(nil)
	_ httpapi.IdemReader   = (*store.Store)(nil)
)
