package host

import (
	"github.com/vigilhq/vigil/host/fetch"
	"github.com/vigilhq/vigil/host/httpapi"
	"github.com/vigilhq/vigil/host/kind"
	"github.com/vigilhq/vigil/host/metrics"
	"github.com/vigilhq/vigil/host/observe"
	"github.com/vigilhq/vigil/host/recipients"
	"github.com/vigilhq/vigil/host/scheduler"
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

// The components host composes fit the interfaces their consumers
// declare: checked here, where they are composed, so no consumer names
// the type that serves it.
var (
	_ httpapi.Phases          = (*recipients.Service)(nil)
	_ httpapi.RecipientLister = (*recipients.Service)(nil)
	_ httpapi.KindSource      = (*kind.Registry)(nil)
	_ httpapi.ScopeLister     = (*observe.Observer)(nil)
	_ httpapi.Seer            = (*scheduler.Scheduler)(nil)
	_ httpapi.ChangeWaiter    = (*scheduler.Scheduler)(nil)
)
