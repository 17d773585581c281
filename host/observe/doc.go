// Package observe records what executors report seeing in outside sources
// and turns each thread of a source into Work.
//
// It owns three things:
//   - Recording. An item is {item, thread, text, revision?, source?, run?}
//     from an authenticated principal. The reporter is that principal,
//     never a field of the request; it must be a listed reporter of the
//     source in the scope's configuration. A scope with no observe entry
//     left has no record operation at all (observe_unavailable, asked
//     before the body is read), which is not not_a_reporter: the seed's
//     "removing a scope's last entry removes observe.record from the
//     toolbelt". The item becomes one observe.item.recorded
//     event (payload observe.item.v1) on the event log, addressed to its
//     thread's key observe/<scope>/<source>/<thread>, and keyed by Once: a
//     digest of scope, source, item and revision. An exact repeat is the
//     first event again ("duplicate"); the same identity with another thread
//     or text is once_conflict. Content is never part of the identity, so A,
//     B, A as three revisions are three events, and an edit is a new
//     revision the executor names. The reporter is kept for audit and is
//     part of no identity: two principals reporting one item give one event.
//   - Trust and budget. The seed's item "derives from the run that saw it"
//     and "spends that chain's per-minute budget"; vigil has no executions
//     of its own, so the run is an id the reporter passes (run, 1-128 of
//     letters, digits and . _ - : / @ +). It is kept on the event (Event.Run,
//     beside the reporter) for audit and, like the reporter, is part of no
//     identity: not in the payload, so another run's repeat is still a
//     duplicate and the event keeps the first run. Recording is budgeted
//     per principal (Rate, Burst) and per run of that principal
//     (RunPerMinute, a bucket of that many refilled over a minute; records
//     naming no run are one run), both or neither. Only a new event spends
//     budget: a duplicate or a conflict gets its tokens back, and a record
//     over budget is first looked up, so a repeat is answered as a duplicate
//     (the seed's "nothing is accepted and no budget is spent"), never 429.
//     Runs are keyed within their principal, so naming another's run id
//     spends only one's own. The per-principal budget is what bounds a
//     reporter: it may name as many runs as it likes, and the per-run one
//     stops a run that loops, not a reporter that lies.
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
//     input, and it settles with exactly the inputs after `after` (the
//     recipient's consumed input when left out). Admission is reading the
//     Work: only for a caller that may read it (GET /api/v1/work/{id}'s
//     rule, asked through kind.Caller), and a Work it may not read is
//     refused exactly as an unknown id (NoWork), before anything else
//     about it is said. What a recipient has been given is its own
//     (store.Work.ConsumedBy): the claimer's is the Work's Consumed, any
//     other recipient's a cursor of its own; once a wake is persisted,
//     its recipient's moves to the last input carried, never another's,
//     so no wait changes what another recipient's next wait carries. At
//     start every open Work is poked, since no one number says every wait
//     on it has been given its last input.
//   - A claim takes a recipient that runs, or one not yet known: a paused
//     or stopped one claims nothing (recipient_not_running), as it takes
//     no new watch. The record is read before the claim's transaction;
//     a pause landing between them leaves what a pause after the claim
//     does.
//
// What it must never do: write an item's text to a log, an error or a
// diagnostic (it is untrusted content, stored on the event and the Work
// only); take the reporter from anywhere but the authenticated principal;
// route an item of a source the configuration no longer declares; let a
// reporter-chosen id grow memory without bound (a run's bucket is dropped
// once it is full again, the same as a fresh one, so what is kept is the
// runs that spent within the last refill window, which the principal's
// budget bounds in turn).
//
// Rejected alternative: x/time/rate's limiters for the budgets. A record
// must spend two budgets atomically and give a token back exactly when the
// append turns out to be a duplicate; a Reservation's cancel restores only
// what later reservations left, and two limiters cannot be taken together.
// A small token bucket under one mutex does both.
//
// Rejected alternative: routing inside the record request. It would make
// the source check happen at record time, so an item accepted just before
// its source was removed would still start Work, and a slow Work write
// would slow every reporter.
package observe
