// Package httpapi is vigil's REST API on fiber v2: the routes under
// /api/v1, /healthz and /mcp, and the one place that turns errors into the
// error envelope {"error":{"code","message","field"?,"setting"?}}.
//
// What it owns: HTTP. Routing; strict request decoding (unknown fields
// refused, bodies bounded); status codes, a client's mistake a 4xx with a
// named code, classified by the error's type, a request fasthttp cannot
// read included; long polls and the server-sent-events stream; a wait on a
// watch, which sleeps on the scheduler's notifier between reads; the
// operator's views, read from what the host already holds; idempotency
// keys (idem.go): a keyed creating request answered its first answer
// again, its record kept by the store in the write's own transaction; and
// /mcp, the MCP server of api/mcpserver over streamable HTTP, its tools
// calling this API in process with the request's own token. Who may do
// what is internal/authz's: every route asks it through one helper (403
// naming what is missing, or the 404 of an unknown id) before it answers.
// The web console is mounted beside the routes, never under /api/,
// /metrics or /healthz.
//
// What it must never do: hold logic of its own (every handler calls one
// host service and translates); answer a client's mistake with a 5xx, or
// a store that cannot answer with anything but 503 (507 for a full disk);
// read an error's text to classify it.
//
// Rejected: the server in api/. api/ is the wire contract and the Go
// client, which clients import; a server there would make the contract
// package depend on the whole host.
package httpapi
