// Package runner is the host side of vigil_exec: it runs one command a
// sandboxed plugin asked for, if the operator granted its program, in the
// workspace where the watch was registered (plugin.ExecCall.WorkspaceOwner:
// the recipient named like the registering principal, else the watch's
// recipient), and answers abi.ExecResponse. It is the
// only place vigil starts a process on a plugin's behalf.
//
// What it owns: the check of a request against a kind's grant, the
// command's environment, its process group, its timeout and the reading
// of its output. What it does not own: which grant a kind has and which
// workspace a recipient declares (the caller passes both), the worker pool
// the call runs on, and the plugin call's own deadline (the ctx it passes).
//
// One Run, in order. Refusals come before anything is started, each
// answered with Failure set and ExitCode -1 (never 0, so a plugin that
// forgets to read Failure does not see a success):
//  1. invalid_request: an empty argv or an empty argv[0]; a NUL byte in
//     any argument.
//  2. not_granted: argv[0] is not a granted program. An absolute argv[0]
//     must equal a granted path byte for byte (nothing is cleaned and no
//     link is followed: "/bin/./sh" is not "/bin/sh", and neither is
//     "/usr/bin/sh" where /bin is a link). A bare name (no slash) names
//     the granted program with that base name, and must name exactly one:
//     two granted programs sharing a base name are reachable only by
//     their paths. A relative path with a slash is never granted. A
//     granted entry that is not a clean absolute path never matches;
//     ResolvePrograms makes the operator's list into such paths once, at
//     load, so a later change to PATH changes nothing. A grant with no
//     MaxTimeout runs nothing (also not_granted). The message names the
//     setting (exec.programs, exec.max_timeout).
//  3. invalid_request: timeout_seconds negative, NaN or infinite, under
//     MinTimeout, or over the grant's MaxTimeout. Zero is the grant's
//     MaxTimeout: JSON cannot tell a zero from an absent field, so zero
//     means "the default".
//  4. invalid_request: stdin over Config.StdinCap.
//  5. no_workspace: dir empty, relative, missing or not a directory.
//  6. unavailable: the caller's ctx is already done.
//
// Then the command: exec.Cmd with Path the granted absolute path and Args
// the request's argv as a vector (argv[0] as the plugin wrote it), Dir the
// workspace, Env exactly the granted names that are set in the host's
// environment (Config.Environ), standard input the request's stdin or
// /dev/null, and its own process group (Setpgid). A program that cannot be
// started is start_failed. Then, whichever comes first:
//   - It exits. Its group is SIGKILLed at once, before the leader is
//     reaped: a background child of a command that exited, 0 or not, does
//     not outlive the probe, because a probe is one bounded observation
//     and nothing it starts may keep running after its answer.
//   - The timeout or ctx ends. The group gets SIGTERM (exec.Cmd.Cancel);
//     after Config.Grace the leader, if still running, gets SIGKILL
//     (exec.Cmd.WaitDelay); when it exits the group is SIGKILLed as above.
//     A group member other than the leader gets SIGTERM and then SIGKILL
//     as soon as the leader is gone, so its grace may be shorter.
//
// The output readers are joined within Config.Grace of the leader's exit
// whatever holds the pipes (WaitDelay closes them), so Run returns within
// timeout + Grace + a small constant. Each stream keeps its first
// Config.OutputCap bytes; the rest is read and discarded, so a child never
// blocks on a full pipe, and Truncated is set. Output is the bytes the
// command wrote, not necessarily UTF-8.
//
// The answer: ExitCode is the exit status, -1 when a signal ended the
// command. TimedOut says the request's timeout ended it. When the
// caller's ctx ended it instead, Failure is unavailable (with the exit and
// output so far): the command did not run out its own time, and "the call
// was abandoned" must not read as a timeout or a failure of the command.
//
// What it must never do:
//   - Run a program off the grant's list, or a path other than the granted
//     one. (A granted shell or interpreter can run anything it can reach:
//     granting one grants all of that, which is the operator's choice.)
//   - Inherit the host's environment. exec.Cmd with a nil Env inherits
//     everything, so Env is always set, empty when nothing is granted.
//   - Pass argv through a shell, or join it into a command line.
//   - Leave a process of the command's group behind after Run returns.
//     Every member has been sent SIGKILL by then; the kernel completes
//     their exit asynchronously, and an orphan is reaped by whoever reaps
//     orphans on the host.
//   - Signal a group id of 1 or less (kill(0) is vigil's own group,
//     kill(-1) every process it may signal), or a group id that may have
//     been reused: the group is signalled by the leader's pid only while
//     the leader is running or an unreaped zombie (it waits with
//     waitid(WNOWAIT), as os does), when that pid cannot name any other
//     group.
//
// The limit: a process that leaves the group (setsid, setpgid, a daemon's
// double fork with setsid) is beyond the group kill and survives. If it
// holds the output pipes, the join still ends after Grace; only a cgroup
// or a PID namespace would contain it, and that is the operator's
// sandbox, not this package's.
//
// Why a process group and WaitDelay: a timeout must terminate the
// command, not merely stop awaiting it, and the guard is only real if the
// output readers' join is bounded too. The rejected alternative is
// exec.CommandContext's default, killing only the direct child: a shell
// script's grandchild (a `sleep 30 &`, a compiler the script started)
// keeps running and keeps stdout open, and Wait reads that pipe until the
// grandchild exits, so the timeout ends the one process that mattered
// least and the probe still hangs. That guard, the bounded join, is the
// one in the seed's command predicate that survived its first mutation;
// here each half has a test that fails without it (a group that ignores
// SIGTERM; a grandchild holding stdout after its parent exits; one that
// has left the group).
//
// Linux only: elsewhere Run answers unavailable. ResolvePrograms and the
// request checks are portable.
package runner
