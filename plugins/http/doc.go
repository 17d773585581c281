// Command http is vigil's bundled http predicate: it settles "ok" once a
// GET of params.url meets what params.expect asks (a status, a piece of
// text in the body, a value at a JSON path; by default any 2xx), or, with
// params.change, settles "changed" once the body differs from the one it
// first saw.
//
// Build (what `just plugins` runs):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -o http.wasm .
//
// It owns one question about one URL, and must never:
//   - settle on "I could not tell": a fetch failure of any reason, a 5xx
//     or a 429 is pending with a note, because a recipient that hears
//     "the page is down" when the network blinked acts on a lie;
//   - fetch in admit: a server that is down at registration may be up at
//     the next check, and that wait is what the watch is for;
//   - read the wall clock or keep state between calls: change mode's
//     memory is the fingerprint the host stores as the watch's baseline.
//
// Where json_path cannot extract anything (a body that is not JSON,
// nothing at the path) the plugin tells the host (Input.ExtractionFailed),
// which forgets the validators stored for that body: otherwise every later
// check could be a 304 re-serving the same broken body, and the watch
// would read "body is not JSON" off bytes fetched once. A value present
// but not the one wanted is an answer, not a failed extraction; nor is an
// unmet status or missing text, which the bytes answer as they are.
//
// Change mode compares the host's fingerprint (the SHA-256 of the body),
// not the body, so a baseline stays small whatever the page's size.
// Rejected alternative: expect and change together. "Changed, and now 200"
// reads as one question but is two, and the answer to "has it changed?"
// would hide a change that failed the expectation; admit refuses the pair.
package main
