package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/hooks"
)

// Hooks takes inbound hooks (a *hooks.Receiver): Accept verifies a
// request before anything else and queues its event, answering at once.
type Hooks interface {
	Accept(source string, h http.Header, body []byte) (queued bool, err error)
}

var _ Hooks = (*hooks.Receiver)(nil)

// HooksPath is where a hook source's URL lives; its name follows.
const HooksPath = "/api/v1/hooks/"

// HookBusyRetryAfter is the Retry-After of a 503 hook_busy: the worker
// drains thousands of events a second.
const HookBusyRetryAfter = time.Second

// hookRoutes mounts the hook sources' URL, outside the bearer token's
// group: the request's signature is its credential.
func (s *server) hookRoutes(app *fiber.App) {
	app.Post(HooksPath+":source", s.acceptHook)
}

// acceptHook verifies a hook and queues its event: 202 at once, 401 for
// a signature that does not verify (or a source no one configured),
// counted and logged without the body, 413 past hooks.MaxBody, 503
// hook_busy when the queue is full.
func (s *server) acceptHook(c *fiber.Ctx) error {
	body := c.Body()
	if len(body) > hooks.MaxBody {
		return &api.Error{Code: api.CodeBodyTooLarge, Message: fmt.Sprintf("a hook's body is at most %d bytes", hooks.MaxBody)}
	}
	source, _ := param(c, "source")
	var h http.Header
	if s.d.Hooks != nil {
		h = make(http.Header)
		c.Request().Header.VisitAll(func(k, v []byte) { h.Add(string(k), string(v)) })
	}
	err := errHookUnconfigured
	queued := false
	if s.d.Hooks != nil {
		queued, err = s.d.Hooks.Accept(source, h, body)
	}
	switch {
	case err == nil:
		c.Status(fiber.StatusAccepted)
		return c.JSON(api.HookAccepted{Queued: queued})
	case errors.Is(err, hooks.ErrBusy):
		return &api.Error{Code: api.CodeHookBusy, Message: "the host's hook queue is full; nothing was taken, retry later", RetryAfter: HookBusyRetryAfter}
	case errors.Is(err, hooks.ErrEvent):
		return &api.Error{Code: api.CodeMalformedJSON, Message: "the hook verified but names no usable event: its body must be JSON and its event name printable ASCII"}
	default: // unverified, or no such source: the same answer, so names are not probed
		return &refused{e: &api.Error{Code: api.CodeUnauthorized, Message: "the hook's signature does not verify for this source"}, reason: "a hook that does not verify"}
	}
}

var errHookUnconfigured = errors.New("no hook source is configured")
