package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/sdk/abi"
)

// Workspaces says where a recipient works: the directory its commands run
// in, or "" for none.
type Workspaces interface {
	Workspace(ctx context.Context, recipient string) (string, error)
}

// WorkspaceFunc adapts a function to Workspaces.
type WorkspaceFunc func(ctx context.Context, recipient string) (string, error)

// Workspace calls f.
func (f WorkspaceFunc) Workspace(ctx context.Context, recipient string) (string, error) {
	return f(ctx, recipient)
}

// PluginExecer is the host side of vigil_exec (a plugin.Execer): it runs a
// plugin's command under its kind's exec grant, in the workspace of the
// recipient whose watch is being observed, and nowhere else.
type PluginExecer struct {
	Runner     *Runner
	Workspaces Workspaces
}

var _ plugin.Execer = PluginExecer{}

// Exec implements plugin.Execer.
func (e PluginExecer) Exec(ctx context.Context, call plugin.ExecCall) abi.ExecResponse {
	if call.Entry.Exec == nil {
		return e.Runner.refuse(abi.ExecNotGranted, fmt.Sprintf("kind %s is not granted exec (setting: kinds.%s.exec)", call.Kind, call.Kind))
	}
	if call.Recipient == "" {
		return e.Runner.refuse(abi.ExecNoWorkspace, "this call observes no recipient's watch, so there is no workspace to run in")
	}
	owner := call.WorkspaceOwner()
	dir, err := e.Workspaces.Workspace(ctx, owner)
	switch {
	case err != nil && !errors.Is(err, context.Canceled):
		return e.Runner.refuse(abi.ExecNoWorkspace, fmt.Sprintf("recipient %s: %v", owner, err))
	case err != nil:
		return e.Runner.refuse(abi.ExecUnavailable, "the call was cancelled")
	case dir == "":
		return e.Runner.refuse(abi.ExecNoWorkspace, fmt.Sprintf("recipient %s declares no workspace (vigil recipient set %s --workspace DIR)", owner, owner))
	}
	g := Grant{Programs: call.Entry.Exec.Programs, Env: call.Entry.Exec.Env, MaxTimeout: call.Entry.Exec.Max()}
	return e.Runner.Run(ctx, g, dir, call.Request)
}
