// Command vigil is the one binary: `vigil serve` runs the host, the other
// subcommands are its clients and tools.
//
// It owns flag parsing, logging setup and process signals, and nothing of
// the host's logic: each subcommand builds the packages under host/ and
// calls them. It must never hold state of its own beyond one invocation
// (a mail cursor file is the caller's, named by --cursor).
//
// Agents' shells branch on its exit codes, so they live in one place
// (exit.go): the constants, their help text, and exitCode, the one
// function that turns a command's error into one. Errors are classified
// by type, never by text: an *api.Error by its code (401 and 5xx: the
// host could not be asked; another 4xx: the caller's mistake), a
// *url.Error as a host that did not answer, and anything cobra refuses
// before a command runs (a flag, an argument, an unknown subcommand) as a
// usage error, by when it happened rather than what it says. Rejected:
// exit 1 for every error, which a shell cannot tell from a failed outcome.
//
// Waiting (watch add --wait, watch wait) follows the watch with the
// server's long poll on its version (GET /api/v1/watches/{id}?wait=), not
// its mailbox: a cancel or a pause mails nothing, and a mailbox poll only
// saw it when the poll ran out. The progress line is drawn only on a
// terminal; piped, a wait writes its result and nothing else.
package main
