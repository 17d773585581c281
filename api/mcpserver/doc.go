// Package mcpserver is vigil's Model Context Protocol server: the tools
// an agent calls to register a watch, halt, and read what woke it, built
// on the official Go SDK (docs/mcp.md).
//
// What it owns: the tools (their names, input schemas and descriptions),
// the register tool's kind enum and when it changes, and the translation
// of the REST API's answers into tool results. Every tool is one call (the
// wait tool at most two) of the REST API through the API interface, which
// *client.Client implements: the same routes, validation, authorization
// and error envelope, and a creating tool's call is the client's creating
// call, under an idempotency key (register_watch also takes the agent's
// own, idempotency_key, for an answer lost between the agent and this
// server). A refusal is a tool result with IsError
// set and the API's envelope as its structured content. It is served over
// stdio (`vigil mcp`) and by the host itself at /mcp (internal/httpapi), with
// the bearer token of the request that carried the call.
//
// What it must never do: decide a default (a field the agent left out is
// sent as nothing, so the host's applies; the register tool names the
// host's defaults only from Config.Defaults); wait without a bound (at
// most MaxWait, the mailbox's longest wait); poll (the kind enum follows
// the host's kinds by a long poll, and a change sends
// notifications/tools/list_changed); import host/ or store/.
//
// Rejected: tools that call the host's services in process when served
// by the host. They would repeat the API's decoding, defaults and
// authorization checks, and the two would drift; going through the API
// costs a loopback of bytes in memory and nothing else.
//
// Public: for a program that serves vigil's tools over an MCP transport
// of its own.
package mcpserver
