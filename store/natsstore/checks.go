package natsstore

import (
	"github.com/vigilhq/vigil/host/delivery"
	"github.com/vigilhq/vigil/host/fetch"
	"github.com/vigilhq/vigil/host/upkeep"
	"github.com/vigilhq/vigil/store"
)

// The core's interfaces this backend satisfies, checked at compile time.
var (
	_ store.Store          = (*Store)(nil)
	_ upkeep.Store         = (*Store)(nil)
	_ delivery.Store       = (*Store)(nil)
	_ delivery.OutboxStore = (*Store)(nil)
	_ fetch.EventLog       = (*Store)(nil)
	_ fetch.EventReader    = (*Store)(nil)
)
