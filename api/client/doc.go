// Package client is the Go client of vigil's REST API (/api/v1): one
// method per route, the wire types of package api in and out.
//
// It owns the HTTP of a client: building requests, the bearer token,
// decoding responses, and turning every non-2xx answer into an *api.Error
// (the envelope's code, message, field and setting), so a caller can
// errors.As and switch on the code rather than on status numbers or
// message text. A body that is not the envelope (a proxy's 502 page, a
// load balancer's 401) becomes an *api.Error with code "internal" whose
// message carries the status.
//
// It must never import host/ or store/: agents, CI bots and the vigil
// CLI import it, and a client that pulled in the host would drag badger,
// wazero and fiber into every one of them. It imports package api and the
// standard library only. It never reconnects or waits on its own: a long
// poll is one request, a stream is one connection, and what to do when
// either ends (read on from which cursor, how soon) is the caller's
// decision, because only the caller knows which messages it has acted on.
// AllWatches follows a listing's pages from cursor to cursor, each once,
// and stops at the first error.
//
// The one retry it makes is of a creating call (CreateWatch, Record,
// ClaimWork, CompleteWork, ReportPhase, ReportActivity: retry.go). Each
// carries a fresh Idempotency-Key (128 random bits) and is sent again
// under the same key after an answer it may have missed (a reset
// connection, a timeout, a gateway's own 502, 503 or 504) and after 503
// store_unavailable or store_busy
// (honouring Retry-After), at most Retry.Attempts times within
// Retry.Within (8 within 30 s by default): the host writes it at most
// once and answers each repeat with the first answer, so an agent's
// registration through a cluster's leader election makes exactly one
// watch. A caller that must repeat a call itself (an MCP client whose
// tool call went unanswered) gives its own key, WithIdempotencyKey. Any other call is sent once: a cancel, a PUT of a recipient and
// every read are the caller's to repeat. Rejected: retrying without a
// key, which turns a lost answer into a second watch; and leaving every
// caller (the CLI, the MCP server, each agent) to write its own loop,
// which they would each get slightly wrong.
//
// A recipient that takes its messages by webhook verifies them with
// package api/webhooks (Verify), the client side of the same signing the
// host uses; docs/webhooks.md carries a test vector.
//
// Rejected alternative: a client that follows the mailbox for the caller
// and hands back a channel. It would have to choose a reconnect policy
// and a buffer size for everyone, and a channel hides the cursor the
// caller needs to resume without missing or repeating a message.
package client
