package host

import (
	"github.com/vigilhq/vigil/internal/fetch"
	"github.com/vigilhq/vigil/internal/httpapi"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/metrics"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/internal/upkeep"
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
