package httpapi

import (
	"context"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/store"
)

// Phases is what the phase, activity and reminder routes need of the
// recipients (*recipients.Service). The server finds it on Deps.Recipients.
type Phases interface {
	ReportPhase(ctx context.Context, id string, r recipients.PhaseReport) (store.Phase, error)
	ReportActivity(ctx context.Context, id string, replies, toolCalls int64) (store.Activity, error)
	SetReminder(ctx context.Context, id string, every time.Duration) (store.RecipientRecord, error)
}

func (s *server) phases() (Phases, error) {
	p, ok := s.d.Recipients.(Phases)
	if !ok {
		return nil, fmt.Errorf("httpapi: the recipients service takes no phase reports")
	}
	return p, nil
}

func (s *server) reportPhase(c *fiber.Ctx) error {
	id, err := recipientParam(c)
	if err != nil {
		return err
	}
	if err := s.allow(c, authz.Action{Verb: authz.ActFor, Recipient: id}); err != nil {
		return err
	}
	var req api.PhaseRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	ph, err := s.phases()
	if err != nil {
		return err
	}
	p, err := ph.ReportPhase(c.UserContext(), id, recipients.PhaseReport{
		Name: req.Name, Text: req.Text, By: Principal(c),
		// Its own claim, which the phase reminder acts on, when the
		// grant names the recipient; seeded on its behalf (an admin's)
		// otherwise. The local principal acts as every recipient.
		Self: principal(c).ActsAs(id),
	})
	if err != nil {
		return err
	}
	return sendJSON(c, fiber.StatusOK, toPhase(p)) // as phaseAnswer renders it
}

func (s *server) reportActivity(c *fiber.Ctx) error {
	id, err := recipientParam(c)
	if err != nil {
		return err
	}
	if err := s.allow(c, authz.Action{Verb: authz.ActFor, Recipient: id}); err != nil {
		return err
	}
	var req api.ActivityRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	ph, err := s.phases()
	if err != nil {
		return err
	}
	a, err := ph.ReportActivity(c.UserContext(), id, req.Replies, req.ToolCalls)
	if err != nil {
		return err
	}
	return sendJSON(c, fiber.StatusOK, toActivity(a)) // as activityAnswer renders it
}

func (s *server) setReminder(c *fiber.Ctx) error {
	id, err := recipientParam(c)
	if err != nil {
		return err
	}
	if err := s.allow(c, authz.Action{Verb: authz.ActFor, Recipient: id}); err != nil {
		return err
	}
	var req api.ReminderRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	every, err := time.ParseDuration(req.Every)
	if err != nil || every <= 0 {
		return &api.Error{Code: api.CodeInvalidField, Field: "every", Message: fmt.Sprintf("%q: want a positive Go duration such as 10m (DELETE opts out)", req.Every)}
	}
	ph, err := s.phases()
	if err != nil {
		return err
	}
	rec, err := ph.SetReminder(c.UserContext(), id, every)
	if err != nil {
		return err
	}
	return c.JSON(api.Reminder{Every: time.Duration(rec.ReminderEvery).String()})
}

func (s *server) clearReminder(c *fiber.Ctx) error {
	id, err := recipientParam(c)
	if err != nil {
		return err
	}
	if err := s.allow(c, authz.Action{Verb: authz.ActFor, Recipient: id}); err != nil {
		return err
	}
	ph, err := s.phases()
	if err != nil {
		return err
	}
	if _, err := ph.SetReminder(c.UserContext(), id, 0); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func toPhase(p store.Phase) api.Phase {
	return api.Phase{Name: p.Name, Text: p.Text, ReportedBy: p.ReportedBy, Seeded: p.Seeded, ReportedAt: p.ReportedAt}
}

func toActivity(a store.Activity) api.Activity {
	out := api.Activity{Replies: a.Replies, ToolCalls: a.ToolCalls}
	if !a.At.IsZero() {
		at := a.At
		out.At = &at
	}
	return out
}
