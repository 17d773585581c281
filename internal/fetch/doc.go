// Package fetch is the issuer behind vigil_fetch: the one way a sandboxed
// plugin reaches the network. An Issuer implements plugin.Fetcher; every
// request a plugin asks for is a command it screens, grants, serves from a
// held result or paces, guards, issues and records, following the issuer
// contract of seed 003 (docs/fetch.md says each step to plugin authors and
// operators).
//
// What it owns:
//   - Screen, pure and exported: the refusal table applied to the command
//     alone, before any network or cache (invalid_request_options).
//   - Grants: the kind's fetch hosts and secrets (not_granted); a secret's
//     value is attached here and appears in no log, fact or answer.
//   - Held results: an identical command is answered from the last result
//     for its resource while that result is younger than the reader's hold
//     (its watch's cadence, raised to the kind's min_read_interval, never
//     under MinInterval), and identical commands in flight share one
//     request; bodies stay under MaxCacheBytes, and a fresh entry is never
//     evicted (a result that finds no room is not held, and counted).
//   - Pacing per origin, with backoff on 429 and 503; a wait longer than
//     the time left is rate_limited at once.
//   - The destination guard at resolve and at dial time (internal/netguard),
//     each redirect hop re-checked; the bounds of a fetch on the Clock.
//   - One fact per origin request or refusal on the "fetch" stream, and
//     the refusals on "fetch.dead_letters", written as a client's write so
//     a nearly full disk stops them before the settlements (a refusal
//     logged once); validators replayed only when they screen, forgotten
//     on a refusal or a failed extraction.
//
// What it must never do: change a command behind the plugin's back (drop a
// header, shorten a timeout: it refuses instead); let a secret's value or
// a header's value reach a log, a fact or a dead letter; retry a command;
// serve a reader a result older than its hold.
//
// Rejected: retrying a failed fetch inside the issuer. A plugin call has
// its own timeout and the scheduler its own cadence; a retry here would
// spend one's budget behind the other's back, and take a second pacing
// slot from an origin that just refused.
package fetch
