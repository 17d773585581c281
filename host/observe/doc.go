// Package observe records what executors report seeing in outside sources
// and turns each thread of a source into Work.
//
// It owns three things:
//   - Recording. An item is {item, thread, text, revision?, source?} from
//     an authenticated principal. The reporter is that principal, never a
//     field of the request; it must be a listed reporter of the source in
//     the scope's configuration. The item becomes one observe.item.recorded
//     event (payload observe.item.v1) on the event log, addressed to its
//     thread's key observe/<scope>/<source>/<thread>, and keyed by Once: a
//     digest of scope, source, item and revision. An exact repeat is the
//     first event again ("duplicate"); the same identity with another thread
//     or text is once_conflict. Content is never part of the identity, so A,
//     B, A as three revisions are three events, and an edit is a new
//     revision the executor names. The reporter is kept for audit and is
//     part of no identity: two principals reporting one item give one event.
//   - Routing. One router, behind a cursor committed with each step, takes
//     recorded items in order. An item whose source is still declared and
//     routed creates observe.thread Work for a thread nobody owns, becomes
//     the next input of the open observe.thread Work that owns it, and is
//     skipped (recorded on observe.skipped) for any other owner, a
//     completed Work included. The source check happens at routing time,
//     under the configuration in force then: removing a source stops it even
//     for items accepted before the removal.
//   - The built-in watch kind observe.thread ({work_id, after?}): the
//     Work's agent parks on it between turns. It is a pushed kind: the
//     router wakes it (scheduler Poke on "work/<id>") when it appends an
//     input, and it settles with exactly the inputs after `after` (the Work's
//     consumed input when left out). Once the wake is persisted the Work's
//     consumed input moves to the last one carried.
//
// What it must never do: write an item's text to a log or a diagnostic (it
// is untrusted content, stored on the event and the Work only); take the
// reporter from anywhere but the authenticated principal; route an item of
// a source the configuration no longer declares.
//
// Rejected alternative: routing inside the record request. It would make
// the source check happen at record time, so an item accepted just before
// its source was removed would still start Work, and a slow Work write
// would slow every reporter.
package observe
