// Package forge is what the bundled ci and ticket plugins share about a
// forge (GitHub or Gitea): where its API is, which repository, which
// host-held secret, how admission checks them against the grants, and how
// one GET of the API is judged. It is compiled into each plugin's .wasm.
//
// It must never turn a fetch that could not tell (a failure, a 404, a 5xx,
// an answer that does not decode) into anything but a pending note.
package forge
