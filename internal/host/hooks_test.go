package host

import (
	"context"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/hooks"
	"github.com/vigilhq/vigil/sdk/abi"
)

// The hook sources are the configuration's at start, and a reload puts
// the next in force (the fallback cadences with them); a reload whose
// sources are invalid keeps those in force; an invalid configuration at
// start is refused.
func TestReloadHookSources(t *testing.T) {
	ctx := context.Background()
	github := hooks.Config{"github": {Kind: "ci", Scheme: abi.SourceGitHub, Secret: "a-github-hook-secret", Fallback: 10 * time.Minute}}
	if _, err := New(ctx, Config{Data: t.TempDir(), PluginCache: t.TempDir(), Hooks: hooks.Config{"g": {Kind: "ci", Scheme: "gitlab"}}}); err == nil {
		t.Fatal("an invalid hook source at start: no error")
	}
	h, err := New(ctx, Config{Data: t.TempDir(), PluginCache: t.TempDir(), Hooks: github})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, ok := h.Hooks.Sources().Source("github"); !ok {
		t.Fatal("the configured source is not in force")
	}
	if f := h.Hooks.Sources().Fallbacks(); f["ci"] != 10*time.Minute {
		t.Fatalf("fallbacks %v", f)
	}
	h.Reload(ctx, &Reloaded{Hooks: hooks.Config{"gitea": {Kind: "ticket", Scheme: abi.SourceGitea, Secret: "a-gitea-hook-secret"}}})
	if _, ok := h.Hooks.Sources().Source("github"); ok {
		t.Fatal("a source gone from the configuration is still in force")
	}
	if _, ok := h.Hooks.Sources().Source("gitea"); !ok {
		t.Fatal("the reloaded source is not in force")
	}
	h.Reload(ctx, &Reloaded{Hooks: hooks.Config{"bad": {Kind: "ci", Scheme: abi.SourceGitHub, Secret: "short"}}})
	if _, ok := h.Hooks.Sources().Source("gitea"); !ok {
		t.Fatal("an invalid reload dropped the sources in force")
	}
}
