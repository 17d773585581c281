package natsstore

import (
	"github.com/vigilhq/vigil/host/delivery"
	"github.com/vigilhq/vigil/host/fetch"
	"github.com/vigilhq/vigil/host/upkeep"
)

// The core's interfaces this backend satisfies, checked at compile time.
var (
	_ upkeep.Store         = (*Store)(nil)
	_ delivery.Store       = (*Store)(nil)
	_ delivery.OutboxStore = (*Store)(nil)
	_ fetch.EventLog       = (*Store)(nil)
	_ fetch.EventReader    = (*Store)(nil)
)
