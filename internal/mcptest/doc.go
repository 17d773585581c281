// Package mcptest is test support for the MCP server's tests, over stdio
// (cmd/vigil) and over streamable HTTP (internal/httpapi): calling a tool
// with the SDK's own client and reading a tool error as the API's
// envelope. It owns no server and no client; it must never be used by
// product code.
//
// Rejected: a copy of each helper in each package's tests, which is what
// it replaced, and which had already drifted (only one checked that the
// error's text names its code).
package mcptest
