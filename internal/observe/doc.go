// Package observe records what executors report seeing in outside sources
// and turns each thread of a source into Work (docs/observe.md).
//
// What it owns:
//   - Recording: an item from an authenticated principal that is a listed
//     reporter of its source becomes one observe.item.recorded event on
//     the event log, keyed by Once (scope, source, item, revision): an
//     exact repeat is the first event again, the same identity with other
//     content is once_conflict. Content is never part of the identity.
//   - The budgets: per principal and per run of that principal, spent only
//     by a new event (a duplicate or a conflict gives its tokens back).
//   - Routing: one router, behind a cursor committed with each step, takes
//     recorded items in order; an item of a source still declared and
//     routed opens observe.thread Work for a thread nobody owns, or becomes
//     the next input of the open Work that owns it, and is skipped for any
//     other owner.
//   - The built-in pushed kind observe.thread: the Work's agent parks on
//     it between turns; the router wakes it (Poke) when it appends an
//     input, and each recipient's consumed input is its own. A wake
//     carries at most MaxWakeItems items within the store's bound on an
//     outcome (store.MaxOutcome), the oldest first, says when more follow,
//     and moves its recipient's input over what it carried alone.
//     Admission reads the Work, and a Work the caller may not read is
//     refused as an unknown id. At start every open Work is poked.
//   - Claims, by a recipient that runs (or is not known yet).
//
// What it must never do: write an item's text to a log, an error or a
// diagnostic (it is untrusted content); take the reporter from anywhere
// but the authenticated principal; route an item of a source the
// configuration no longer declares; let a reporter-chosen id grow memory
// without bound.
//
// Rejected: routing inside the record request. The source check would
// happen at record time, so an item accepted just before its source was
// removed would still start Work, and a slow Work write would slow every
// reporter.
package observe
