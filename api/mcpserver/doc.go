// Package mcpserver is vigil's Model Context Protocol server: the tools
// an agent calls to register a watch, halt, and read what woke it, built
// on the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// What it owns: the tools (their names, input schemas and descriptions),
// the kind enum of the register tool and when it changes, and the
// translation of the REST API's answers into tool results. Every tool is
// one call (or, for the wait tool, at most two) of the REST API through
// the API interface, which *client.Client implements: the same routes,
// the same validation, the same authorization, the same error envelope.
// A creating tool's call (register, record, claim, complete) is the
// client's creating call: under a fresh idempotency key, sent again under
// it after a lost answer or a 503 store_unavailable or store_busy, so a
// tool call through a cluster's election makes one watch. register_watch
// also takes the agent's own key (idempotency_key), for the answer lost
// between the agent and this server: the same call again under it is
// answered the first watch (client.WithIdempotencyKey).
// A refusal comes back as a tool result with IsError set, its text the
// API's "code: message", its structured content {"error":{code, message,
// field, setting}}: an agent reads it and corrects itself. Protocol
// errors are left for what is wrong with the MCP exchange itself.
//
// Two transports serve it. `vigil mcp` runs it over stdio with one
// client of a running host (cmd/vigil/mcp.go); the host serves it itself
// over streamable HTTP at /mcp (host/httpapi/mcp.go), where each tool
// call speaks to the API with the bearer token of the HTTP request that
// carried it.
//
// What it must never do:
//   - Decide a default. A field the agent left out (every, expires_at,
//     limit, cursor) is sent as nothing, so the host's default applies and
//     the CLI, the REST API and MCP cannot drift on how long an agent may
//     be left waiting (seed 002). Nor state one of its own: the register
//     tool names the host's defaults only from Config.Defaults, the
//     scheduler's constants its builder passes in.
//   - Wait without a bound. The wait tool waits at most MaxWait, the
//     mailbox's longest wait (delivery.MaxWait on the host; a test there
//     holds the two equal), and answers "still pending" with the version
//     to pass next time; the mailbox tool's wait has the same bound.
//   - Poll. The register tool's kind enum follows the host's kinds: on
//     the host a plugin reload closes the kind registry's Changed channel
//     and Follow re-reads the kinds; over stdio, `vigil mcp` runs one
//     follower that long-polls GET /kinds?wait=&since= (the list's
//     version) and calls Refresh on each change, and the kinds are read
//     again too when the agent lists the tools or registers a watch. A
//     change re-adds the register tool, and the SDK sends
//     notifications/tools/list_changed.
//   - Import host/ or store/: it speaks the wire types of package api,
//     so the stdio server carries nothing of the daemon.
//
// Not built: the mailbox as a subscribable resource. The SDK's
// subscriptions are per URI for the whole server, while a mailbox read
// is authorized per bearer token; a resource notified when a message
// lands would need a follower per subscription holding its subscriber's
// token, started and stopped with the subscription. The mailbox tool
// with its cursor and a bounded wait gives the same messages without it.
//
// Rejected alternative: tools that call the host's services in process
// (the scheduler, the mailboxes) when served by the host. They would
// repeat the API's decoding, defaults and authorization checks, and the
// two would drift; going through the API costs a loopback of bytes in
// memory on the host and nothing else.
package mcpserver
