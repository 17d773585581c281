// Command ticket is vigil's bundled ticket predicate, a standing kind: it
// mails a change each time a person changes one issue or pull request on
// GitHub or Gitea (its title, state, draft flag, body or comment count),
// for as long as its recipient runs.
//
// Build (what `just plugins` runs):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -o ticket.wasm .
//
// It owns the question "did this ticket change since I last looked?", and
// must never:
//   - mail the first look: the first check records the snapshot as the
//     watch's baseline, silently, because "it exists" is not news;
//   - keep what a person did not change: the snapshot holds only title,
//     state, draft, a SHA-256 digest of the body and the comment count, not
//     timestamps, reactions or labels a bot touches, so a change is a
//     person's change, and the baseline stays small whatever the body;
//   - call a failure a change: a fetch failure, a 404, a 5xx or a 429 is
//     pending with a note, and the baseline stays as it was;
//   - settle, fetch in admit, read the wall clock, or see a token (the host
//     attaches the secret token_ref names).
//
// The watch's memory is its baseline, which the host persists before it
// mails a change, so a crash loses at most one notice and never repeats
// one.
package main
