package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/captoken"
	"github.com/vigilhq/vigil/internal/signal"
)

// Signals answers a signal's capability URL (a *signal.Service).
type Signals interface {
	Ask(ctx context.Context, token string) (signal.Question, error)
	Send(ctx context.Context, token, outcome string, data json.RawMessage) (signal.Question, error)
}

// SignalsPath is where a signal's capability URL lives; its token follows.
const SignalsPath = "/api/v1/signals/"

// signalCSP is the signal page's policy: no script at all, the console's
// stylesheet, and its one form posting to the page itself.
const signalCSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// signalRoutes mounts the capability URL, outside the bearer token's
// group: the token in the path is the credential. They are mounted
// before /api/v1's group, whose authentication they so never reach.
func (s *server) signalRoutes(app *fiber.App) {
	app.Get(SignalsPath+":token", s.signalPage)
	app.Post(SignalsPath+":token", s.sendSignal)
}

// signalToken is the path's token, or "" (which names no signal).
func signalToken(c *fiber.Ctx) string {
	v, ok := param(c, "token")
	if !ok {
		return ""
	}
	return v
}

// newSignalToken makes the capability token of a signal's registration.
func newSignalToken() (string, error) { return captoken.New(rand.Reader) }

// signalURL is the capability URL of token, as the request reached the
// host (its scheme and host).
func signalURL(c *fiber.Ctx, token string) string {
	return c.BaseURL() + SignalsPath + token
}

// signalHeaders are every signal answer's: the token in the URL must not
// leave in a Referer, nor be kept by a cache.
func signalHeaders(c *fiber.Ctx) {
	c.Set("Referrer-Policy", "no-referrer")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("X-Content-Type-Options", "nosniff")
}

func toSignal(q signal.Question) api.Signal {
	out := api.Signal{
		Title: q.Params.Title, Prompt: q.Params.Prompt, Outcomes: q.Params.Outcomes, Schema: q.Params.Schema,
		State: string(q.Watch.State), ExpiresAt: q.Watch.ExpiresAt, SettledAt: q.Watch.SettledAt,
	}
	if q.Answer != nil {
		out.Outcome, out.Data = q.Answer.Outcome, q.Answer.Data
	}
	return out
}

// wantsHTML says the client is a browser: it asks for HTML before JSON.
func wantsHTML(c *fiber.Ctx) bool {
	return c.Accepts(fiber.MIMEApplicationJSON, fiber.MIMETextHTML) == fiber.MIMETextHTML
}

// signalPage answers GET of the URL: the page (a browser), or the signal
// as JSON (Accept: application/json).
func (s *server) signalPage(c *fiber.Ctx) error {
	signalHeaders(c)
	q, err := s.signals().Ask(c.UserContext(), signalToken(c))
	err = s.unknownSignal(c, err)
	if !wantsHTML(c) {
		if err != nil {
			return err
		}
		return c.JSON(toSignal(q))
	}
	if err != nil {
		return s.htmlError(c, signalView{Err: toAPIError(err)}, err)
	}
	return s.signalHTML(c, signalView{Q: toSignal(q)}, fiber.StatusOK)
}

// sendSignal answers POST of the URL: JSON (an agent, a system, the CLI)
// or the page's form (outcome=…), answered as a page.
func (s *server) sendSignal(c *fiber.Ctx) error {
	signalHeaders(c)
	form := strings.HasPrefix(strings.ToLower(c.Get(fiber.HeaderContentType)), fiber.MIMEApplicationForm)
	var req api.SignalRequest
	var err error
	switch {
	case len(c.Body()) > signal.MaxBody:
		err = &api.Error{Code: api.CodeBodyTooLarge, Message: fmt.Sprintf("a signal's body is at most %d bytes", signal.MaxBody)}
	case form:
		req.Outcome = c.FormValue("outcome")
	default:
		err = decode(c, &req)
	}
	var q signal.Question
	if err == nil {
		if req.Outcome == "" {
			err = &api.Error{Code: api.CodeInvalidField, Field: "outcome", Message: "required"}
		} else {
			q, err = s.signals().Send(c.UserContext(), signalToken(c), req.Outcome, req.Data)
			err = s.unknownSignal(c, err)
		}
	}
	var ce *signal.ConflictError
	switch {
	case errors.As(err, &ce) && form:
		return s.signalHTML(c, signalView{Q: toSignal(ce.Question), Err: ce.Err}, fiber.StatusConflict)
	case errors.As(err, &ce):
		return c.Status(fiber.StatusConflict).JSON(api.SignalConflict{Error: *ce.Err, Signal: toSignal(ce.Question)})
	case err != nil && form:
		e := toAPIError(err)
		view := signalView{Err: e}
		if aq, aerr := s.signals().Ask(c.UserContext(), signalToken(c)); aerr == nil {
			view.Q = toSignal(aq)
		}
		return s.htmlError(c, view, err)
	case err != nil:
		return err
	case form:
		return s.signalHTML(c, signalView{Q: toSignal(q), Sent: true}, fiber.StatusOK)
	}
	return c.JSON(toSignal(q))
}

// signals is the service answering the URL: Deps.Signals, else none.
func (s *server) signals() Signals {
	if s.d.Signals != nil {
		return s.d.Signals
	}
	return noSignals{}
}

// noSignals is a host that serves no signal: every URL names none.
type noSignals struct{}

func (noSignals) Ask(context.Context, string) (signal.Question, error) {
	return signal.Question{}, signal.NotFound()
}

func (noSignals) Send(context.Context, string, string, json.RawMessage) (signal.Question, error) {
	return signal.Question{}, signal.NotFound()
}

type signalView struct {
	Q    api.Signal
	Err  *api.Error
	Sent bool
}

var signalTemplate = template.Must(template.New("signal").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{{if .Q.Title}}{{.Q.Title}} · {{end}}vigil signal</title>
<link rel="stylesheet" href="/console/app.css">
</head>
<body>
<header><span class="brand">vigil</span><span class="muted">signal</span></header>
<main>
{{- if .Q.Title}}
<h1>{{.Q.Title}}</h1>
{{- if .Q.Prompt}}<p class="facts">{{.Q.Prompt}}</p>{{end}}
{{- end}}
{{- if .Err}}<p class="problem" role="alert">{{.Err.Message}}{{if .Err.Field}} ({{.Err.Field}}){{end}}</p>{{end}}
{{- if eq .Q.State "pending"}}
<form method="post" class="toolbar">
{{- range $i, $o := .Q.Outcomes}}
<button type="submit" name="outcome" value="{{$o}}"{{if eq $i 0}} class="primary"{{end}}>{{$o}}</button>
{{- end}}
</form>
{{- if .Q.ExpiresAt}}<p class="muted small">Unanswered, it expires at {{.Q.ExpiresAt.UTC.Format "2006-01-02 15:04 MST"}}.</p>{{end}}
{{- if .Q.Schema}}<p class="muted small">This signal takes data too: send it with vigil signal send URL --outcome OUTCOME --data JSON.</p>{{end}}
{{- else if .Q.State}}
<p>{{if .Sent}}Sent: {{else}}Answered: {{end}}<span class="state state-{{.Q.State}}">{{if .Q.Outcome}}{{.Q.Outcome}}{{else}}{{.Q.State}}{{end}}</span></p>
{{- end}}
</main>
</body>
</html>
`))

// unknownSignal makes a URL that names no signal a refusal, counted and
// logged (without the token: the route's template) as a wrong bearer
// token is: a run of them is someone guessing.
func (s *server) unknownSignal(_ *fiber.Ctx, err error) error {
	var ae *api.Error
	if errors.As(err, &ae) && ae.Code == api.CodeNotFound {
		return &refused{e: ae, reason: "no signal has this token"}
	}
	return err
}

// htmlError answers err as the page, counted as the error handler counts
// a refusal.
func (s *server) htmlError(c *fiber.Ctx, v signalView, err error) error {
	var rf *refused
	if errors.As(err, &rf) {
		s.audit(c, v.Err.Code, rf.reason)
	}
	return s.signalHTML(c, v, api.Status(v.Err.Code))
}

func (s *server) signalHTML(c *fiber.Ctx, v signalView, status int) error {
	var b bytes.Buffer
	if err := signalTemplate.Execute(&b, v); err != nil {
		return err
	}
	c.Set("Content-Security-Policy", signalCSP)
	c.Set("X-Frame-Options", "DENY")
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(status).Send(b.Bytes())
}

// logPath is the request's path as the log may hold it: a capability
// URL's token cut out.
func logPath(c *fiber.Ctx) string {
	p := c.Path()
	for _, prefix := range []string{SignalsPath, HeartbeatsPath} {
		if i := strings.Index(strings.ToLower(p), prefix); i >= 0 {
			return p[:i+len(prefix)] + "…"
		}
	}
	return p
}

var _ Signals = (*signal.Service)(nil)
