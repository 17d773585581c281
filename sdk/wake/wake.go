// Package wake exports the optional wake function of ABI
// vigil.predicate/v1 for the plugin sdk.Register registers. A plugin
// whose sdk.Plugin sets Wake imports it for that effect alone:
//
//	import _ "github.com/vigilhq/vigil/sdk/wake"
//
// Why a package of its own: go:wasmexport is fixed when the module is
// built, and the host reads a module's exports to learn which kinds wake
// (kind.Info's wakes). Were the export in package sdk, every Go plugin
// would export wake, woken or not. Register refuses a plugin that sets
// Wake without this import, and one that imports it without a Wake, so
// the export and the function never disagree.
//
// Rejected: describe declaring the wake (one more field the host must
// trust against the module it can read for itself).
package wake

import "github.com/vigilhq/vigil/sdk/internal/export"

func init() { export.WakeLinked = true }
