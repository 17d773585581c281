package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
)

// KindSource is every kind the host serves, plugins and built in (a
// *kind.Registry), and the signal that they were written again (a plugin
// reload): the MCP server's register tool names them in its kind enum.
type KindSource interface {
	Infos() []kind.Info
	Changed() <-chan struct{}
}

// listKinds answers the kinds. With ?wait=D it is a bounded long poll
// on the list's version, as getWatch's is on a watch's: at once when the
// version differs from ?since= (or since is empty), else as soon as the
// registry is written with kinds that differ, else at the end of the wait
// with the list unchanged; 200 either way. A reload that writes the same
// kinds again keeps the wait waiting: the version is the list's, not the
// reload's.
func (s *server) listKinds(c *fiber.Ctx) error {
	wait, waiting, err := waitParam(c)
	if err != nil {
		return err
	}
	if !waiting {
		return c.JSON(s.kinds())
	}
	since := c.Query("since")
	ctx, cancel := s.requestContext(c)
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, wait)
	defer stop()
	for {
		changed := s.kindsChanged() // taken before the read: a write in between wakes it
		out := s.kinds()
		if out.Version != since || ctx.Err() != nil {
			if principal(c).Revoked() && !s.stillAuthenticated(c) {
				return revokedError()
			}
			return c.JSON(out)
		}
		select {
		case <-changed:
		case <-ctx.Done():
		}
	}
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
	out.Version = kindsVersion(out.Kinds)
	return out
}

// kindsVersion is the digest of a kind list: its JSON, hashed.
func kindsVersion(kinds []api.Kind) string {
	b, err := json.Marshal(kinds)
	if err != nil {
		return "" // a Kind is plain data; Marshal cannot fail on it
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// kindsChanged is the kinds' change signal, or nil (never ready) when
// the server was given no KindSource.
func (s *server) kindsChanged() <-chan struct{} {
	if s.d.Kinds == nil {
		return nil
	}
	return s.d.Kinds.Changed()
}
