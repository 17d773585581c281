package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vigilhq/vigil/api/abi"
	"github.com/vigilhq/vigil/plugins/internal/forge"
	"github.com/vigilhq/vigil/plugins/internal/note"
	"github.com/vigilhq/vigil/sdk"
)

// Kind is the predicate's name.
const Kind = "ticket"

// Params name one issue (or pull request) of one repository.
type Params struct {
	forge.Ref
	// Number is the issue's or pull request's number.
	Number int `json:"number"`
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    ` + forge.SchemaProperties + `,
    "number": {"type": "integer", "minimum": 1, "maximum": 2147483647,
               "description": "the issue's or pull request's number"}
  },
  "required": ["forge", "repo", "number"],
  "additionalProperties": false
}`

// Plugin is the ticket kind.
var Plugin = sdk.Plugin[Params]{
	Kind:         Kind,
	Version:      "1.0.0",
	Summary:      "mails each change a person makes to an issue or pull request: title, state, draft, body, comments",
	Standing:     true,
	DefaultEvery: time.Minute,
	Schema:       schema,
	Capabilities: []string{abi.CapabilityFetch},
	Example:      Params{Ref: forge.Ref{Forge: forge.GitHub, APIBase: forge.GitHubAPI, Repo: "vigilhq/vigil"}, Number: 42},
	Admit:        admit,
	Observe:      observe,
	Destinations: func(p Params) []sdk.Destination { return p.Ref.Destinations() },
}

// admit checks configuration only; it never asks whether the issue exists.
func admit(p Params, g sdk.Grants) error {
	if p.Number < 1 || p.Number > 1<<31-1 {
		return sdk.InvalidParams("number", "%d: want an issue number from 1", p.Number)
	}
	return p.Ref.Admit(Kind, g)
}

// Snapshot is what a person changes about a ticket, and nothing else: it
// is the watch's baseline.
type Snapshot struct {
	Title      string `json:"title"`
	State      string `json:"state"`
	Draft      bool   `json:"draft"`
	BodySHA256 string `json:"body_sha256"`
	Comments   int    `json:"comments"`
}

// Change is a changed outcome's detail.
type Change struct {
	Changed []string `json:"changed"`
	Before  Snapshot `json:"before"`
	After   Snapshot `json:"after"`
}

// observe reads the ticket once and compares it with the baseline.
func observe(p Params, in sdk.Input) (sdk.Result, error) {
	f := p.Ref
	var issue struct {
		Title    *string `json:"title"`
		State    *string `json:"state"`
		Draft    bool    `json:"draft"`
		Body     *string `json:"body"`
		Comments int     `json:"comments"`
	}
	u := f.Base() + "/repos/" + p.Repo + "/issues/" + strconv.Itoa(p.Number)
	if note := f.Get(in, u, "issue", &issue); note != "" {
		return sdk.Pending(note), nil
	}
	var title, state, body string
	if issue.Title != nil {
		title = *issue.Title
	}
	if issue.State != nil {
		state = *issue.State
	}
	if issue.Body != nil {
		body = *issue.Body
	}
	sum := sha256.Sum256([]byte(body))
	after := Snapshot{
		Title: title, State: state, Draft: issue.Draft,
		BodySHA256: hex.EncodeToString(sum[:]), Comments: issue.Comments,
	}
	var before Snapshot
	ok, err := in.DecodeBaseline(&before)
	// Every ticket has a state: a snapshot without one was taken of an
	// answer that was not a ticket, and is never mailed as a change,
	// neither from nor to.
	if err != nil || !ok || before.State == "" {
		// The first look (or a baseline this version cannot read, or one
		// that was not a ticket): recorded silently, since "it exists" is
		// not news.
		return sdk.Baseline(after), nil
	}
	if issue.Title == nil || state == "" {
		return sdk.Pending("could not tell: the answer has no title or state"), nil
	}
	changed, said := diff(before, after)
	if len(changed) == 0 {
		return sdk.Pending("no change"), nil
	}
	return sdk.Changed(sdk.Outcome{
		Result:  "changed",
		Summary: fmt.Sprintf("%s#%d: %s", p.Repo, p.Number, strings.Join(said, ", ")),
		Detail:  Change{Changed: changed, Before: before, After: after},
	}, after), nil
}

// diff names the fields that moved, and says how in words.
func diff(a, b Snapshot) (changed, said []string) {
	if a.Title != b.Title {
		changed = append(changed, "title")
		said = append(said, "title changed to "+strconv.Quote(note.Clip(b.Title)))
	}
	if a.State != b.State {
		changed = append(changed, "state")
		said = append(said, "state "+a.State+" → "+b.State)
	}
	if a.Draft != b.Draft {
		changed = append(changed, "draft")
		if b.Draft {
			said = append(said, "marked draft")
		} else {
			said = append(said, "ready for review")
		}
	}
	if a.BodySHA256 != b.BodySHA256 {
		changed = append(changed, "body")
		said = append(said, "body edited")
	}
	if a.Comments != b.Comments {
		changed = append(changed, "comments")
		said = append(said, fmt.Sprintf("comments %d → %d", a.Comments, b.Comments))
	}
	return changed, said
}
