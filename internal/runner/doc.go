// Package runner is the host side of vigil_exec: it runs one command a
// sandboxed plugin asked for, if the operator granted its program, in the
// workspace where the watch was registered, and answers abi.ExecResponse.
// It is the only place vigil starts a process on a plugin's behalf.
//
// What it owns: the check of a request against a kind's grant (argv[0] a
// granted absolute path byte for byte, or the one granted program of that
// base name; a timeout within the grant; stdin within its cap; an
// existing workspace), the command's environment (exactly the granted
// names), its own process group, its timeout (SIGTERM to the group, then
// SIGKILL after a grace) and the bounded reading of its output. Refusals
// come before anything starts, with ExitCode -1. A caller's context that
// ends is unavailable, never a timeout of the command. What it does not
// own: which grant a kind has and which workspace a recipient declares
// (the caller passes both).
//
// What it must never do: run a program off the grant's list; inherit the
// host's environment; pass argv through a shell; leave a process of the
// command's group behind after Run returns; signal a process group it
// cannot be sure is the command's (id 1 or less, or one whose leader was
// reaped). A process that leaves the group (setsid, a daemon's double
// fork) is beyond it: containing that is the operator's sandbox (a cgroup,
// a PID namespace). docs/plugins.md says what an operator grants.
//
// Rejected: exec.CommandContext's default, killing only the direct child.
// A script's grandchild keeps running and keeps stdout open, and Wait
// reads that pipe until it exits, so the timeout ends the one process that
// mattered least and the probe still hangs. Hence the process group and
// exec.Cmd.WaitDelay, each with a test that fails without it.
//
// Linux only: elsewhere Run answers unavailable.
package runner
