// Package fetch is the issuer behind vigil_fetch: the one way a sandboxed
// plugin reaches the network. An Issuer implements plugin.Fetcher; every
// request a plugin asks for is a command it screens, grants, paces, guards,
// issues and records, following the issuer contract of seed 003.
//
// One Fetch, in order:
//  1. Screen, from the command alone, before any network or cache is
//     touched (Screen is pure and exported). Refused, as
//     invalid_request_options: a method other than GET or HEAD; a URL that
//     is not absolute http or https, carries userinfo or does not parse;
//     the hop-by-hop names (connection, keep-alive, proxy-connection, te,
//     trailer, transfer-encoding, upgrade), host, content-length and every
//     proxy-*; a name that is not an RFC 9110 token (empty, a space, a
//     colon, non-ASCII, surrounding whitespace); a value with a byte outside
//     \x20–\x7e after its surrounding SP and HTAB are trimmed (CR, LF, NUL,
//     inner HTAB, obs-text); two names differing only in case, whatever
//     their values; more than MaxHeaders headers or more than
//     MaxHeaderBytes of them, counted as the bytes of each name plus its
//     trimmed value, the issuer's default user-agent counted in neither;
//     an authorization header together with a secret; a timeout_seconds
//     that is zero, negative, NaN, infinite, under a millisecond or over
//     Config.MaxTimeout (zero is not a duration, and absent is not zero:
//     an absent one is Config.DefaultTimeout; abi.FetchRequest keeps which
//     it was). Names are lower-cased and merged over the issuer's
//     {"user-agent": Config.UserAgent}, the command winning: exactly one
//     user-agent goes out. Nothing inside a value is touched. A message
//     names the offending header, never its value.
//  2. Grants: the URL's host must be in the kind's fetch_hosts
//     (abi.HostGranted), and a named secret must be granted to the kind
//     and present in the host's configuration, or the command is
//     not_granted, naming the setting that would grant it. The secret's
//     value is attached here, as "authorization: Bearer …", and appears in
//     no log line, fact, response or error.
//  3. Held results: an identical command (same method, URL, headers and
//     secret name) is answered from the last result for that resource,
//     from_cache set, without a request, while that result is younger than
//     the reader's own hold: the cadence of the watch being observed
//     (plugin.FetchCall.Every, which the scheduler puts on the probe's
//     context), raised to its kind's floor on reading one resource (the
//     registry entry's min_read_interval), and never less than
//     Config.MinInterval. So N watches of one issue at a one-minute
//     cadence cost one origin read a minute, whatever N; a watch at 10 s
//     is never served a result older than 10 s, unless its kind's floor
//     is longer: then one ticket watch at 5 s beside others at a minute
//     still costs one read a minute (the bundled ticket and ci have a
//     floor of 1m). A watch's next probe comes a cadence after its last one ended,
//     so it is never served its own last result; one probed sooner (a
//     next_check hint, its final observation at the deadline) may be
//     served a result up to a cadence old, which is what its cadence
//     accepts. Identical commands in flight together share one origin
//     request.
//  4. The destination guard (host/netguard, one Guard per set of the
//     kind's private_ranges): the name is resolved and every address it
//     answers is checked; a refused one is destination_refused, before
//     anything is sent.
//  5. Pacing per origin (scheme, host, port): at least MinInterval between
//     requests; a 429 or 503 raises the interval to 2 s, then 4 s, then
//     8 s, or to a longer Retry-After (seconds or HTTP-date, capped at
//     QuietPeriod) for the next request; QuietPeriod without either resets
//     it. The wait is one operation: a command whose wait is longer than
//     its timeout, or than the time it has left (the whole-fetch bound,
//     and its context), is rate_limited at once, without waiting and
//     without taking a slot.
//  6. The request, on a transport whose dialer resolves again and checks
//     each address with the guard's DialControl where the connection is
//     made; redirects, at most Config.MaxRedirects, each hop re-checked for
//     its grant and by the guard (an attached secret does not follow a hop
//     to another host, port or scheme). A hop is not paced: there are at
//     most MaxRedirects of them, inside the one command's time. A revalidation sends the stored ETag and
//     Last-Modified, screened again first; a 304 answers the stored
//     response with not_modified set.
//  7. The bounds, all on the Clock (and the caller's context): the
//     command's timeout (timeout_seconds, else Config.DefaultTimeout) bounds
//     each operation (the resolve, the connect with its TLS, the wait for
//     the answer's headers, each read of the body) and is re-armed at each
//     sign of progress; Config.MaxFetchTime (default 120 s, never less than
//     MaxTimeout) bounds the whole fetch, so a body trickled a byte at a
//     time ends there. Either passing is a timeout failure (held, not
//     dead-lettered): the plugin cannot tell, and answers pending. It is
//     not a refusal: the same command may well succeed next time.
//  8. The answer: a body over Config.MaxBody is too_large; response header
//     names in lower case, first value each; the fingerprint is the hex
//     SHA-256 of the body. Any HTTP status is a response: the plugin reads
//     it and decides.
//
// The failure taxonomy (FetchResponse.Failure.Reason, and a fetch.failed
// fact):
//
//	reason                   when                                              held  dead letter
//	invalid_request_options  Screen refused the command; nothing was sent      no    yes
//	not_granted              host or secret not granted; a redirect hop's      no*   yes
//	                         (*held, as a result of an origin request)
//	destination_refused      an address the guard refuses, at resolve, dial
//	                         or redirect                                       yes   yes
//	rate_limited             the origin's pacing wait exceeds the time left    no    no
//	timeout                  an operation outlasted the command's timeout,
//	                         the fetch its whole-fetch bound, or the call
//	                         its deadline                                      yes   no
//	connect_failed           DNS failure, refused or reset connection, TLS or
//	                         malformed answer: no response from the origin     yes   no
//	too_large                the body is over MaxBody                          yes   no
//	http_status              a response with status 400 or more (the response
//	                         itself is answered; only the fact is a failure)   yes   no
//	unavailable              the issuer could not: the call was cancelled,
//	                         the redirect limit was passed                     yes   no
//
// What is held, retried and dead-lettered:
//   - Held: every result of an origin request, failures included, for
//     each reader's hold (its cadence, at least MinInterval) from when it
//     was obtained. A refusal before the cache
//     (invalid_request_options, not_granted) is never held, nor is
//     rate_limited, which is decided from each command's own time left.
//   - Retried: nothing. The issuer makes one attempt per command; a
//     plugin that wants another asks again, and pacing and the hold decide
//     when that reaches the origin.
//   - Dead-lettered: the refusals, whose re-issue is refused identically
//     (invalid_request_options, not_granted, destination_refused), on the
//     stream "fetch.dead_letters"; DeadLetters reads them back. A dead
//     letter names the method, the URL (userinfo replaced), the kind, the
//     header names, the reason and message, the command id and when.
//   - invalid_request_options, and that reason alone, also clears the
//     stored validators of every resource at the refused URL, so a value
//     kept under an older screen cannot wedge the resource. Validators are
//     also screened when kept and again when replayed: an unsendable one is
//     dropped and the request goes out unconditional, costing one full
//     fetch instead of a refusal.
//   - A failed extraction also forgets them, and is no refusal: a plugin
//     that could not extract what it needs from an answer's bytes calls
//     vigil_extraction_failed (Issuer.ExtractionFailed) with its request
//     and the answer's fingerprint. When the resource's stored response
//     has that fingerprint, its validators and it are forgotten, so the
//     next request is unconditional and a 304 cannot re-confirm a broken
//     extraction (seed 003: a matching validator produces no bytes, so
//     nothing is extracted again). Validators stored since for other bytes
//     stay; the held result stays for its interval, as it would for any
//     reader. The report is screened and granted like a fetch (a refusal
//     answers Failure, with no fact and no dead letter), and sends
//     nothing.
//
// Facts: each command gets a fresh command_id. Each origin request and
// each refusal records exactly one fact on the stream "fetch":
// fetch.succeeded keyed by command_id, or fetch.failed keyed by
// command_id:occurred_at (RFC 3339, nanoseconds, UTC), so a command's
// failures never collapse into one. A held or coalesced answer records
// nothing: it made no request. Facts and log lines carry header names,
// never values; the secret by name only. An event log that fails is
// logged and never fails the fetch. Facts and dead letters are written
// with a client's margin (store.ClientWrite): on a disk nearly full they
// stop with the clients' writes, leaving the room the store keeps for the
// host to the settlements of acknowledged watches, and the refusal is
// logged once, not per fetch.
//
// Bounds, and the memory they trade: the held and stored bodies stay under
// Config.MaxCacheBytes (default 64 MiB), on access, with no goroutine of
// its own. An entry is fresh while its result is younger than the longest
// hold among the readers it was fetched for or served (this generation and
// the one before), and a fresh entry is never dropped to make room: a busy
// fleet dropping the ticket a hundred watches share, least recently used,
// would turn one read a minute into a hundred. An entry that is no longer
// fresh is kept for its validators, and for a slower reader it may still
// serve, until room is needed; room is made from those, the first to have
// stopped being fresh first. When every entry is fresh and the cap is
// reached, a new result is not held: its resource's reads go to the origin
// (still paced per origin) until room frees up, and each such result is
// counted (Metrics.FetchNotHeld, vigil_fetch_not_held_total). So memory is
// the cap, reached and kept when the host has fetched that much, and
// under a cap full of fresh results the cost moves to origin reads, which
// the metric shows, rather than to a silent re-read of what many watches
// share. The alternative, evicting fresh entries, bounds memory the same
// and breaks the one-read-per-interval promise exactly when the fleet is
// largest.
//
// Pacing state is kept only for origins asked or refusing recently. One
// guard and transport is kept per distinct set of private ranges (at most
// 64), so connections are reused across a kind's fetches.
//
// DNS rebinding. The seed's issuer resolves and checks a name, then hands
// the name to the transport, which resolves again, and it leaves the
// window between the two open. Here the name is checked at both: Resolve
// before the request, for a refusal decided before anything is sent, and
// the guard's DialControl on every address the transport dials, after its
// own resolution. A name that answers a public address at the check and a
// private one at the dial is refused at the dial, and no byte is sent to
// it.
//
// Why the reader's cadence, not only MinInterval, holds a result: vigil
// promises one read per resource per interval however many watches ask
// (seed 002: one read attempt per ticket per minute, however many
// workspaces). MinInterval is that promise seen from the origin's side and
// is all a fetch outside a probe gets; a watch's cadence is how stale an
// answer it already accepts between probes, so serving it a result younger
// than that changes nothing it could observe, and four watches probing one
// issue 15 s apart share one read a minute instead of making four. The
// cadence alone lets any one watch at 5 s make the resource read every
// 5 s for all of them; a kind's floor (min_read_interval) holds the
// promise whatever one watch asks, at the price of that watch seeing a
// change up to the floor late.
//
// Rejected alternative: retrying a failed fetch inside the issuer. A
// plugin call has its own timeout and the scheduler its own cadence; a
// retry here would spend one's budget behind the other's back, and would
// take a second pacing slot from an origin that just refused.
package fetch
