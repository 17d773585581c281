package host_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/vigilhq/vigil/internal/host"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/plugins"
)

// The records of the host each kind's params may name, as audited for
// admission (docs/authorization.md): a kind whose params name a Work, a
// watch, a recipient or a scope admits only what the registering
// principal may read, and has its rows, one per principal, in the grants
// table (internal/httpapi TestGrantsOnEveryRoute).
var paramsName = map[string]string{
	"observe.thread":     "a Work (work_id): admitted only for a caller that may read it",
	"recipient.reminder": "nothing: every, an interval; registered by the host alone, for the watch's own recipient",
	"signal":             "nothing: a title, a prompt, outcomes and a schema; who may register one for whom is the route's grant",
	"heartbeat":          "nothing: a name, a period and a grace; registered by the host alone, for the recipient that declares it",
	"timer":              "nothing: at, an instant",
	"http":               "nothing of the host: a URL, screened by the fetch guard",
	"ci":                 "nothing of the host: a forge's repository and commit (token_ref names a secret granted to the kind)",
	"ticket":             "nothing of the host: a forge's issue (token_ref as ci)",
	"command":            "nothing of the host: argv of granted programs, run in the registering principal's workspace",
}

// Every kind a host serves, bundled plugins and built-in kinds, has been
// audited for the records its params name: one this list does not know
// fails here until it is. A kind audited as naming none admits its own
// example alike for a caller that reads nothing and for the host, which
// reads everything.
func TestEveryServedKindIsAuditedForTheRecordsItsParamsName(t *testing.T) {
	ctx := context.Background()
	h, err := host.New(ctx, host.Config{Data: t.TempDir(), PluginCache: wasmbuild.CacheDir(), Bundled: plugins.Bundled()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	var served []string
	for _, info := range h.Core.Registry.Infos() {
		served = append(served, info.Kind)
		if _, ok := paramsName[info.Kind]; !ok {
			t.Errorf("kind %s (%s) is not audited for the records its params name", info.Kind, info.Source)
			continue
		}
		if info.Kind == "observe.thread" || info.Example == nil {
			continue
		}
		answer := func(c kind.Caller) string {
			adm, err := h.Core.Registry.Admit(ctx, info.Kind, kind.AdmitRequest{Params: info.Example, Recipient: "agent-1", Caller: c})
			return fmt.Sprintf("%+v %v", adm, err)
		}
		if nobody, host := answer(nil), answer(kind.HostCaller{}); nobody != host {
			t.Errorf("kind %s admits its example as %s for a caller that reads nothing, as %s for the host", info.Kind, nobody, host)
		}
	}
	for name := range paramsName {
		if !slices.Contains(served, name) {
			t.Errorf("the audit names kind %s, which the host does not serve", name)
		}
	}
}
