package httpapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/heartbeat"
	"github.com/vigilhq/vigil/store"
)

// Heartbeats takes heartbeats' pings (a *heartbeat.Service).
type Heartbeats interface {
	Ping(ctx context.Context, token string, failed bool, note string) (heartbeat.Pinged, error)
}

var _ Heartbeats = (*heartbeat.Service)(nil)

// HeartbeatsPath is where a heartbeat's ping URL lives; its token
// follows (and /fail, for a failure's).
const HeartbeatsPath = "/api/v1/heartbeats/"

// heartbeatRoutes mounts the ping URLs, outside the bearer token's group
// as a signal's URL is: the token in the path is the credential.
func (s *server) heartbeatRoutes(app *fiber.App) {
	app.Post(HeartbeatsPath+":token", s.ping(false))
	app.Post(HeartbeatsPath+":token/fail", s.ping(true))
}

// ping answers a ping: recorded (its body, bounded, the note), or 404
// for a URL that names no heartbeat, counted as a refusal.
func (s *server) ping(failed bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		signalHeaders(c)
		if len(c.Body()) > heartbeat.MaxNote {
			return &api.Error{Code: api.CodeBodyTooLarge, Message: fmt.Sprintf("a ping's body is at most %d bytes", heartbeat.MaxNote)}
		}
		tok, _ := param(c, "token")
		hs := s.d.Heartbeats
		if hs == nil {
			return &refused{e: heartbeat.NotFound(), reason: "no heartbeat has this token"}
		}
		p, err := hs.Ping(c.UserContext(), tok, failed, string(c.Body()))
		var ae *api.Error
		if errors.As(err, &ae) && ae.Code == api.CodeNotFound {
			return &refused{e: ae, reason: "no heartbeat has this token"}
		}
		if err != nil {
			return err
		}
		return c.JSON(api.Ping{Heartbeat: p.Heartbeat.Name, LastPing: p.Heartbeat.LastPing, Failed: p.Heartbeat.Failed})
	}
}

// recipientView is a recipient as the request's principal sees it: its
// heartbeats' ping URLs only for one that may act for it.
func (s *server) recipientView(c *fiber.Ctx, rec store.RecipientRecord) api.Recipient {
	out := toRecipient(rec)
	if p := principal(c); p == nil || !p.Allows(authz.Action{Verb: authz.ActFor, Recipient: rec.ID}) {
		return out
	}
	for i, h := range rec.Heartbeats {
		out.Heartbeats[i].PingURL = c.BaseURL() + HeartbeatsPath + h.Token
	}
	return out
}
