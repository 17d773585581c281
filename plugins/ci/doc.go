// Command ci is vigil's bundled ci predicate: it settles once every check
// on one commit of a GitHub or Gitea repository has finished, "success"
// when all passed and "failure" naming the ones that did not.
//
// Build (what `just plugins` runs):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -o ci.wasm .
//
// It owns the question "has CI on commit X finished, and how?", and must
// never:
//   - key on a branch: a branch moves (a force-push, a merge), and a watch
//     on "main" would answer for a commit nobody asked about; admit takes
//     only a full 40-hex-digit SHA, and a result for another SHA never
//     answers this one;
//   - call "no checks yet" success: a commit CI has not reached yet has no
//     failing checks either; terminal needs at least one check and none
//     still running;
//   - settle on "I could not tell": a fetch failure, a 404 (a repository
//     the token cannot see looks like one that does not exist), a 5xx or a
//     429 is pending with a note, because a recipient that reads a network
//     blip as a red build acts on a lie;
//   - fetch in admit, or see a token: the token is a secret the host holds
//     and attaches (token_ref names it); admit checks only that the kind is
//     granted it.
//
// GitHub reports CI two ways, check runs (Actions and apps) and commit
// statuses (older integrations); both are read, and a check of either
// counts. Gitea reports commit statuses only. A check whose conclusion this
// plugin does not know is "could not tell", not a guess either way.
package main
