package httpapi

import (
	"context"
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/kind"
)

// Refusals counts the requests authorization refused, by route and code.
type Refusals interface {
	Refused(route, code string)
}

type nopRefusals struct{}

func (nopRefusals) Refused(string, string) {}

type principalKey struct{}

// Principal is the authenticated principal's name: the token's, or
// kind.LocalPrincipal when the server has no tokens.
func Principal(c *fiber.Ctx) string {
	if p := principal(c); p != nil {
		return p.Name
	}
	return ""
}

func principal(c *fiber.Ctx) *authz.Principal {
	p, _ := c.Locals(principalKey{}).(*authz.Principal)
	return p
}

// caller is the request's principal as a kind's admission asks of it
// (kind.Caller): what its grant may read. Nil, which reads nothing, for a
// route outside authenticate.
func caller(c *fiber.Ctx) kind.Caller {
	if p := principal(c); p != nil {
		return p
	}
	return nil
}

// refused is an authorization refusal on its way to the error handler,
// which logs and counts it (never the token) before answering e.
type refused struct {
	e      *api.Error
	reason string
}

func (r *refused) Error() string { return r.reason }
func (r *refused) Unwrap() error { return r.e }

// authenticate finds the request's principal in the policy in force: a
// bearer token's, or the local principal when there are no tokens.
func (s *server) authenticate(c *fiber.Ctx) error {
	got := bearer(c)
	p, ok := s.o.Auth.Policy().Authenticate(got)
	if !ok {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="vigil"`)
		reason := "no bearer token"
		if got != "" {
			reason = "an unknown bearer token"
		}
		return &refused{e: &api.Error{Code: api.CodeUnauthorized, Message: "a valid bearer token is required (Authorization: Bearer <token>)"}, reason: reason}
	}
	c.Locals(principalKey{}, p)
	return c.Next()
}

// bearer is the request's bearer token, or "" for none (another scheme,
// or a bare token).
func bearer(c *fiber.Ctx) string {
	got, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok {
		return ""
	}
	return got
}

// allow is the one check every route makes before it returns or changes
// anything: nil, or 403 forbidden naming what the principal lacks.
func (s *server) allow(c *fiber.Ctx, a authz.Action) error {
	d, err := check(c, a)
	if d != nil {
		return &refused{e: &api.Error{Code: api.CodeForbidden, Message: d.Error()}, reason: d.Error()}
	}
	return err
}

// visible is allow for a route that names only an id: an item the
// principal may not see answers exactly as an unknown one (notFound), so
// an id leaks neither its existence nor its owner.
func (s *server) visible(c *fiber.Ctx, a authz.Action, notFound *api.Error) error {
	d, err := check(c, a)
	if d != nil {
		return &refused{e: notFound, reason: "hidden: " + d.Error()}
	}
	return err
}

// check asks the request's principal about a: the refusal, or an error
// for a route outside authenticate (a bug).
func check(c *fiber.Ctx, a authz.Action) (*authz.Denied, error) {
	p := principal(c)
	if p == nil {
		return nil, &api.Error{Code: api.CodeInternal, Message: "internal error"}
	}
	var d *authz.Denied
	if err := p.Check(a); !errors.As(err, &d) {
		return nil, err
	}
	return d, nil
}

// audit logs and counts a refused request.
func (s *server) audit(c *fiber.Ctx, code, reason string) {
	route := s.routeOf(c)
	s.refusals.Refused(route, code)
	s.log.Warn("request refused", "principal", Principal(c), "route", route, "code", code, "reason", reason)
}

// routeOf is the request's route template ("GET /api/v1/watches/:id"),
// or "unrouted".
func (s *server) routeOf(c *fiber.Ctx) string {
	path := strings.ToLower(c.Path()) // fiber routes without regard to case
	for _, r := range s.routes {
		if r.Method == c.Method() && matches(strings.ToLower(r.Path), path) {
			return r.Method + " " + r.Path
		}
	}
	return "unrouted"
}

// requestContext is the context of a request that waits (a long poll, a
// stream): it ends when the server shuts down or the principal's token is
// revoked.
func (s *server) requestContext(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(s.d.Base)
	p := principal(c)
	if p == nil {
		return ctx, cancel
	}
	stop := context.AfterFunc(p.Revocation(), cancel)
	return ctx, func() { stop(); cancel() }
}

// stillAuthenticated reports whether the request's bearer token
// authenticates under the policy in force now: after a reload changed its
// grant (not removed it), a wait the revocation ended answers as a wait
// that ran out, and the client's next request is checked under the new
// grant.
func (s *server) stillAuthenticated(c *fiber.Ctx) bool {
	p, ok := s.o.Auth.Policy().Authenticate(bearer(c))
	return ok && !p.Revoked()
}

// revokedError answers a wait the principal's revocation ended.
func revokedError() error {
	return &refused{e: &api.Error{Code: api.CodeUnauthorized, Message: "the bearer token was revoked"}, reason: "the token was revoked while the request waited"}
}
