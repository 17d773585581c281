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
//     the assignees (an agent's issue-ops tool assigns itself), the
//     last-updated time (its sticky comment's edit moves it), reactions or
//     labels, so a change is a person's change, an edit of those alone is
//     silent, and the baseline stays small whatever the body;
//   - mail a comment a person did not write: when the count rises, the
//     newest comments are read (the thread is listed only then: at most
//     two pages on GitHub, the whole thread on Gitea) and a new comment
//     counts only if it holds none of the issue-ops markers and was not
//     written by the account the watch's token is (GET /user). The markers
//     are the watch's ignore_markers param, or DefaultMarkers (a sticky
//     status comment's and a handover note's) when it names none. The
//     markers alone must be enough: a forge that cannot say who the token
//     is (no token, /user refused) still must not echo the tool's own
//     comment, so the login is a second filter, never the only one. A rise
//     of only such comments is recorded in the baseline silently, so they
//     are not read again;
//   - call a failure a change: a fetch failure, a 404, a 5xx or a 429 is
//     pending with a note, and the baseline stays as it was;
//   - settle, fetch in admit, read the wall clock, or see a token (the host
//     attaches the secret token_ref names).
//
// The watch's memory is its baseline, which the host persists before it
// mails a change, so a crash loses at most one notice and never repeats
// one.
//
// Why the markers are a param and not the kind's registry config: every
// other thing a ticket watch knows is in its params, and a param is what
// admit sees and checks (at most 16 markers of 1 to 256 bytes); an operator
// whose tooling writes other markers registers its watches with them. The
// seed's world has two issue-ops markers of its own tool; vigil writes no
// comments itself, so the defaults name the two an agent's tool is asked
// to write, and the param replaces them whole ([] for none).
//
// "New" is the newest k comments of the thread, k the count's rise: a
// comment deleted in the same interval as another is added can make that
// one look old, at worst a missed notice, never a repeated one. New
// comments past what was read count as a person's.
package main
