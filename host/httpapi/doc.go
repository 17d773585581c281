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
// Rejected alternative: the server in api/. api/ is the wire contract and
// the Go client, which clients import; a server there would make the
// contract package depend on the whole host.
package httpapi
