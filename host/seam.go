package host

import (
	"github.com/vigilhq/vigil/host/core"
	"github.com/vigilhq/vigil/host/fetch"
	"github.com/vigilhq/vigil/host/httpapi"
	"github.com/vigilhq/vigil/host/kind"
	"github.com/vigilhq/vigil/host/metrics"
	"github.com/vigilhq/vigil/host/observe"
	"github.com/vigilhq/vigil/host/recipients"
	"github.com/vigilhq/vigil/host/scheduler"
	"github.com/vigilhq/vigil/host/upkeep"
)

// The core's Store covers what every component host builds over it uses
// of the store, each through the interface that component declares: a
// backend that is a core.Store serves them all, with no change to them.
var (
	_ observe.Store        = core.Store(nil)
	_ fetch.EventLog       = core.Store(nil)
	_ fetch.EventReader    = core.Store(nil)
	_ upkeep.Store         = core.Store(nil)
	_ metrics.StateCounter = core.Store(nil)
	_ httpapi.Watches      = core.Store(nil)
	_ httpapi.IdemReader   = core.Store(nil)
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
