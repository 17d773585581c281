package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/recipients"
)

// Overviewer composes the operator's overview from what the host counts.
type Overviewer interface {
	Overview(ctx context.Context) (api.Overview, error)
}

// NodeInfo says which node this is, for GET /api/v1/cluster (its plugin
// set digest is the API's to compute).
type NodeInfo interface {
	Node() api.ClusterNode
}

// ClusterInfo is a NodeInfo of a node of a cluster: Cluster is the
// cluster as the node's view of the leases shows it (every live node, each
// partition's and job's owner), false while the node has not joined.
type ClusterInfo interface {
	Cluster() (api.Cluster, bool)
}

// RecipientLister lists recipients with their pending watches, when the
// Recipients service can (a *recipients.Service does).
type RecipientLister interface {
	List(ctx context.Context) ([]recipients.Listed, error)
}

// ScopeLister lists the observe scopes in force, when the Observe service
// can (an *observe.Observer does).
type ScopeLister interface {
	Scopes() []observe.ScopeInfo
}

// Console is the operator's web console, served beside the API at the
// paths it says it serves (GET and HEAD only); it never answers under
// /api/, /metrics or /healthz.
type Console interface {
	http.Handler
	Serves(path string) bool
}

// The modes of GET /api/v1/cluster: one host owns everything, or nodes
// on a JetStream cluster share it through leases.
const (
	ClusterModeSingle  = "single"
	ClusterModeCluster = "cluster"
)

// viewRoutes registers the operator's read-only views and the console.
func (s *server) viewRoutes(app *fiber.App, v1 fiber.Router) {
	v1.Get("/overview", s.overview)
	v1.Get("/cluster", s.cluster)
	v1.Get("/recipients", s.listRecipients)
	v1.Get("/plugins/:kind", s.getPlugin)
	v1.Get("/scopes", s.listScopes)
	if s.o.Console != nil {
		console, serves := adaptor.HTTPHandler(s.o.Console), s.o.Console.Serves
		app.Use(func(c *fiber.Ctx) error {
			p := c.Path()
			if (c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead) || reserved(p) || !serves(p) {
				return c.Next()
			}
			return console(c)
		})
	}
}

// reserved are the paths the console may never answer: the API's, the
// metrics' and the health check's.
func reserved(p string) bool {
	return p == "/api" || strings.HasPrefix(p, "/api/") || p == "/metrics" || p == "/healthz"
}

func (s *server) overview(c *fiber.Ctx) error {
	if err := s.allow(c, authz.Action{Verb: authz.Operate}); err != nil {
		return err
	}
	if s.d.Overview == nil {
		return &api.Error{Code: api.CodeNotFound, Message: "this host keeps no overview"}
	}
	v, err := s.d.Overview.Overview(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(v)
}

func (s *server) cluster(c *fiber.Ctx) error {
	if err := s.allow(c, authz.Action{Verb: authz.Operate}); err != nil {
		return err
	}
	if ci, ok := s.d.Node.(ClusterInfo); ok {
		if cl, ok := ci.Cluster(); ok {
			return c.JSON(cl)
		}
	}
	var node api.ClusterNode
	if s.d.Node != nil {
		node = s.d.Node.Node()
	}
	node.PluginSetDigest = kind.SetDigest(s.d.Plugins.Plugins())
	node.Self = true
	// Partitions is [] and never null: a client reads a list either way.
	return c.JSON(api.Cluster{Mode: ClusterModeSingle, Nodes: []api.ClusterNode{node}, Partitions: []api.ClusterPartition{},
		Note: "a single host owns every watch, recipient and stream: there are no partitions"})
}

// listRecipients answers every recipient the principal may read (all of
// them for an operator), by id, with its pending watches.
func (s *server) listRecipients(c *fiber.Ctx) error {
	l, ok := s.d.Recipients.(RecipientLister)
	if !ok {
		return &api.Error{Code: api.CodeNotFound, Message: "this host cannot list its recipients"}
	}
	all, err := l.List(c.UserContext())
	if err != nil {
		return err
	}
	pr := principal(c)
	out := api.RecipientList{Recipients: []api.ListedRecipient{}}
	for _, r := range all {
		if !pr.Operator() && !pr.Allows(authz.Action{Verb: authz.Read, Recipient: r.ID}) {
			continue
		}
		out.Recipients = append(out.Recipients, api.ListedRecipient{Recipient: toRecipient(r.RecipientRecord), Pending: r.Pending, PendingCapped: r.Capped})
	}
	return c.JSON(out)
}

// getPlugin answers one kind as its plugin described it: its params
// schema (what a form is generated from), grants and digest.
func (s *server) getPlugin(c *fiber.Ctx) error {
	k, _ := param(c, "kind")
	for _, i := range s.d.Plugins.Plugins() {
		if i.Kind == k {
			return c.JSON(toPluginDetail(i))
		}
	}
	return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no kind %q is loaded", k)}
}

func toPluginDetail(i kind.Info) api.PluginDetail {
	p := toPlugin(i)
	grants, _ := json.Marshal(i.Grants) // a struct of strings: an object, never an error
	schema := i.Schema
	if len(schema) == 0 {
		schema = json.RawMessage("{}")
	}
	return api.PluginDetail{Kind: p.Kind, Version: p.Version, Summary: p.Summary, File: p.File, SHA256: p.SHA256,
		Standing: p.Standing, Pushed: i.Pushed, Wakes: i.Wakes, DefaultEvery: p.DefaultEvery, Capabilities: p.Capabilities, Grants: grants,
		Observable: p.Observable, Setting: p.Setting, ParamsSchema: schema, Example: i.Example}
}

// listScopes answers the observe scopes in force (their names are the
// operator's configuration, not a secret: the observe route tells an
// unknown scope from a known one too), each saying whether the principal
// may list its Work.
func (s *server) listScopes(c *fiber.Ctx) error {
	l, ok := s.d.Observe.(ScopeLister)
	if !ok {
		return &api.Error{Code: api.CodeNotFound, Message: "this host cannot list its scopes"}
	}
	pr := principal(c)
	out := api.ScopeList{Scopes: []api.ScopeView{}}
	for _, sc := range l.Scopes() {
		v := api.ScopeView{Name: sc.Name, Sources: make([]api.SourceView, 0, len(sc.Sources)), MayRead: pr.Allows(authz.Action{Verb: authz.ReadScope, Scope: sc.Name})}
		for _, src := range sc.Sources {
			v.Sources = append(v.Sources, api.SourceView{Name: src.Name, Routed: src.Routed})
		}
		out.Scopes = append(out.Scopes, v)
	}
	return c.JSON(out)
}
