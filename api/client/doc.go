// Package client is the Go client of vigil's REST API (/api/v1): one
// method per route, the wire types of package api in and out.
//
// What it owns: the HTTP of a client. Building requests, the bearer token,
// decoding responses, and turning every non-2xx answer into an *api.Error
// (a body that is not the envelope, a proxy's 502 page, into one of code
// "internal" carrying the status), so a caller switches on the code; and
// the one retry it makes, of a creating call (CreateWatch, Record,
// ClaimWork, CompleteWork, ReportPhase, ReportActivity; retry.go): under
// a fresh Idempotency-Key, sent again under the same key after an answer
// it may have missed (a reset, a timeout, a gateway's own 502, 503 or 504)
// or a 503 store_unavailable or store_busy (honouring Retry-After), bounded
// by Retry.Attempts and Retry.Within. The host writes it once and answers
// each repeat with the first answer. A caller that repeats a call itself
// gives its own key (WithIdempotencyKey). Any other call is sent once.
//
// What it must never do: import host/ or store/ (agents, CI bots and the
// CLI import it; it imports api and the standard library only); reconnect
// or wait on its own (a long poll is one request, a stream one connection,
// and what to do when either ends is the caller's, who knows which
// messages it acted on).
//
// Rejected: retrying a creating call without a key, which turns a lost
// answer into a second watch.
//
// Public: for any Go program that calls vigil's API.
package client
