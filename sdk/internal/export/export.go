// Package export joins the optional exports of ABI vigil.predicate/v1 to
// the plugin package sdk serves. An optional export lives in a package of
// its own (sdk/wake for wake), so that only a plugin importing it exports
// it: go:wasmexport is fixed at build time, and the host reads a module's
// exports to know which kinds have the optional ones.
//
// It holds the one piece of state that split forces, and nothing else:
// package sdk fills in the export's body at its init, and the export's
// package says, at its own, that it is linked, so Register can refuse a
// plugin whose Wake and export disagree. Nothing outside the SDK's module
// can import it.
package export

// Wake is the body of the wake export: package sdk sets it, under
// wasip1, before any export is called.
var Wake func() int32

// WakeLinked says package sdk/wake is in the build, so the module
// exports wake.
var WakeLinked bool
