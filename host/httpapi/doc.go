// Package httpapi is vigil's REST API on fiber v2: the routes under
// /api/v1, /healthz, and the one place that turns errors into the error
// envelope {"error":{"code","message","field"?,"setting"?}}.
//
// It owns HTTP: routing, strict request decoding (unknown fields refused,
// bodies bounded), status codes, long polls and the server-sent-events
// stream. It must never hold logic of its own: every handler calls one
// host service (scheduler, recipients, delivery, plugin runtime) and
// translates.
//
// What it guarantees at the transport: a request fasthttp cannot read is
// answered in the envelope too, classified by the error's type (never its
// text): request line and headers over HeaderLimit 431 headers_too_large,
// a target over MaxURI (or, on Listener, a request line over HeaderLimit)
// 414 uri_too_long, a stalled request past the read
// timeout 408 request_timeout, a body over the limit 413, anything else
// 400 malformed_request. None of these is a 5xx: a client's mistake is a
// 4xx with a named code. Path parameters are percent-decoded (param)
// before any handler reads them.
//
// Who may do what is host/authz's to decide: every route asks it through
// allow (403 naming what is missing) or visible (an id the principal may
// not see answers 404, as an unknown one) in auth.go before it answers.
// Who reports a recipient's phase is the request's principal; whether it
// acts as the recipient itself (so the phase is its own claim, which the
// phase reminder acts on, rather than one seeded on its behalf) is
// authz.Principal.ActsAs.
//
// A wait on a watch (GET /api/v1/watches/{id}?wait=D&since=V) compares
// the watch's version, a digest of what a waiter waits for (convert.go,
// watchVersion), and sleeps on the scheduler's notifier (ChangeWaiter)
// between reads: the notifier's channel is taken before each read, so a
// change in between is not missed, and nothing re-reads on a timer. Its
// context is the long poll's (requestContext): it ends on revocation.
// A pending watch's view takes its probes so far and last probe time from
// Deps.Seen (host/core: on a cluster the owner's, asked within a bound,
// and probes_from says whose), else from the Scheduler's memory.
// The operator's views (views.go: the overview, the cluster, the
// recipient list, one plugin's describe) read what the host already
// holds, never a walk of the watch rows per request. The web console
// (host/console) is mounted beside the routes for GET and HEAD of the
// paths it says it serves, and never under /api/, /metrics or /healthz,
// whatever it claims: the API's answers, including its 404s, stay the
// API's.
//
// Idempotency keys (idem.go). Each creating route (POST /watches, POST
// /scopes/{scope}/observe, POST /work/{id}/claim and /complete, PUT
// /recipients/{id}/phase, POST /recipients/{id}/activity) runs behind
// idempotent: an Idempotency-Key header is parsed (api.ParseIdempotencyKey;
// 400 invalid_idempotency_key otherwise), the principal's record under it
// read first (the same method, path and body answered its first answer
// again, byte for byte, with Idempotent-Replayed; another request 422
// idempotency_key_reused), and else the key handed to the route's one
// write through the request's context, where the store checks it again
// and keeps its record in the write's own transaction. The answer kept
// and the answer sent are one rendering of what the write wrote (the
// route's answerer), so they are the same bytes. A refused request keeps
// no key. store.ErrUnavailable is 503 store_unavailable with
// Retry-After, its message saying whether the write may have happened;
// a 500 is a bug.
//
// /mcp serves the MCP server of package api/mcpserver over streamable
// HTTP (mcp.go), behind the same authenticate as /api/v1. Its tools call
// this API in process with the request's own bearer token (inProcess), so
// they cannot answer otherwise than a REST client is answered; the SDK's
// net/http handler is bridged onto fiber by serveMCP, which streams each
// flush (fiber's adaptor buffers a whole response, which would hold the
// session's stream forever). GET /api/v1/kinds and the register tool's
// kind enum are one conversion of the kind registry (kinds.go).
//
// Rejected alternative: the server in api/. api/ is the wire contract and
// the Go client, which clients import; a server there would make the
// contract package depend on the whole host.
package httpapi
