// Command vigil is the one binary: `vigil serve` runs the host, the other
// subcommands are its clients and tools.
//
// It owns flag parsing, logging setup and process signals, and nothing of
// the host's logic: each subcommand builds the packages under host/ and
// calls them. It must never hold state of its own beyond one invocation.
package main
