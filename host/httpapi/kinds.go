package httpapi

import (
	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/host/kind"
)

// KindSource is every kind the host serves, plugins and built in (a
// *kind.Registry), and the signal that they were written again (a plugin
// reload): the MCP server's register tool names them in its kind enum.
type KindSource interface {
	Infos() []kind.Info
	Changed() <-chan struct{}
}

var _ KindSource = (*kind.Registry)(nil)

func (s *server) listKinds(c *fiber.Ctx) error {
	return c.JSON(s.kinds())
}

// kinds is what GET /kinds answers, and what /mcp's tools name: one
// conversion for both, so the REST API and MCP cannot disagree on which
// kinds there are.
func (s *server) kinds() api.KindList {
	plugins := map[string]bool{}
	var infos []kind.Info
	if s.d.Plugins != nil {
		infos = s.d.Plugins.Plugins()
	}
	for _, i := range infos {
		plugins[i.Kind] = true
	}
	if s.d.Kinds != nil {
		infos = s.d.Kinds.Infos()
	}
	out := api.KindList{Kinds: make([]api.Kind, 0, len(infos))}
	for _, i := range infos {
		k := api.Kind{Kind: i.Kind, Version: i.Version, Summary: i.Summary, Standing: i.Standing, Observable: i.Observable,
			Setting: i.Setting, ParamsSchema: i.Schema, Example: i.Example, BuiltIn: !plugins[i.Kind]}
		if i.DefaultEvery > 0 {
			k.DefaultEvery = i.DefaultEvery.String()
		}
		out.Kinds = append(out.Kinds, k)
	}
	return out
}

// kindsChanged is the kinds' change signal, or nil (never ready) when
// the server was given no KindSource.
func (s *server) kindsChanged() <-chan struct{} {
	if s.d.Kinds == nil {
		return nil
	}
	return s.d.Kinds.Changed()
}
