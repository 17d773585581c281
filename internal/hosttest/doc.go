// Package hosttest is test support for the host's packages: the fakes
// their tests kept a copy of each. FakeKinds is a scripted set of kinds
// (scheduler.Kinds: Lookup, Admit, Observe, Settled) with the answers the
// tests share by default; IDs is a seeded source of watch ids.
//
// It imports no component of the host but internal/kind, so a component's
// own tests (the scheduler's, in package scheduler) can use it; the API's
// side of the fake plugins (Plugins, Problems, Reload) is apitest.FakePlugins.
// It must never be imported by product code.
//
// Rejected: a fake per package, five of them for the kinds alone, each
// drifting in which kinds it served and how it refused.
package hosttest
