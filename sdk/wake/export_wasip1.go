//go:build wasip1

package wake

import "github.com/vigilhq/vigil/sdk/internal/export"

//go:wasmexport wake
func exportWake() int32 { return export.Wake() }
