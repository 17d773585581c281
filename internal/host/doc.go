// Package host is the composition root of `vigil serve`: from a Config of
// decided settings it builds the core (internal/core: store, kind registry,
// delivery and outbox, scheduler, recipients) and what the product adds
// around it (metrics, the fetch issuer, the exec runner, the plugin
// runtime registering its kinds, observe and its built-in kind, the
// upkeep that enforces retention, the REST API), in one order; Run starts
// their goroutines and stops them, in the reverse order, when its context
// ends; Close releases the rest. OpenPlugins builds the plugin side
// alone (the runtime with the same issuer and runner, no store, no API),
// for `vigil plugins` and `vigil plugin try`, so what they load and how
// their fetches and commands go is what serve's would be.
// The store is whatever backend
// Config.OpenStore opens (badger in Data by default), held as a
// *store.Store; seam.go checks at compile time that it covers what each
// component built here uses of it.
//
// What it must never do: read flags, files or the environment (the command
// decides the settings and hands them over), or decide anything a
// component owns.
//
// Rejected: the wiring in cmd/vigil's serve function, beside the flags and
// signals, where each new component was one more deferred close in a
// function nobody could build from a test.
package host
