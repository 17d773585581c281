package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vigilhq/vigil/plugins/internal/forge"
	"github.com/vigilhq/vigil/plugins/internal/note"
	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

// Kind is the predicate's name.
const Kind = "ticket"

// Params name one issue (or pull request) of one repository.
type Params struct {
	forge.Ref
	// Number is the issue's or pull request's number.
	Number int `json:"number"`
	// IgnoreMarkers are the markers an issue-ops tool writes into its own
	// comments: a new comment whose body holds any of them is the tool's,
	// not a person's, and is no change. Absent: DefaultMarkers; [] none.
	IgnoreMarkers *[]string `json:"ignore_markers,omitempty"`
}

// DefaultMarkers are the issue-ops markers a ticket watch ignores when its
// params name none: those of a sticky status comment and of a handover
// note, the two comments an agent's issue-ops tool writes on a ticket.
var DefaultMarkers = []string{"<!-- issue-ops:sticky -->", "<!-- issue-ops:handover -->"}

// Bounds of ignore_markers.
const (
	maxMarkers     = 16
	maxMarkerBytes = 256
)

// markers are the markers p ignores.
func (p Params) markers() []string {
	if p.IgnoreMarkers == nil {
		return DefaultMarkers
	}
	return *p.IgnoreMarkers
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    ` + forge.SchemaProperties + `,
    "number": {"type": "integer", "minimum": 1, "maximum": 2147483647,
               "description": "the issue's or pull request's number"},
    "ignore_markers": {"type": "array", "maxItems": 16,
                       "items": {"type": "string", "minLength": 1, "maxLength": 256},
                       "description": "markers an issue-ops tool writes into its comments: a new comment holding one is not a change (default: <!-- issue-ops:sticky --> and <!-- issue-ops:handover -->; [] for none)"}
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
	// The ticket: every watch on it lands on one node of a cluster, and
	// an event about it (wake) wakes every watch on it.
	PartitionKey: func(p Params) string { return issueKey(p.Ref, p.Number) },
	Wake:         wake,
}

// admit checks configuration only; it never asks whether the issue exists.
func admit(p Params, g sdk.Grants) error {
	if p.Number < 1 || p.Number > 1<<31-1 {
		return sdk.InvalidParams("number", "%d: want an issue number from 1", p.Number)
	}
	if p.IgnoreMarkers != nil {
		ms := *p.IgnoreMarkers
		if len(ms) > maxMarkers {
			return sdk.InvalidParams("ignore_markers", "%d markers: want at most %d", len(ms), maxMarkers)
		}
		for _, m := range ms {
			if m == "" || len(m) > maxMarkerBytes {
				return sdk.InvalidParams("ignore_markers", "want each marker 1 to %d bytes", maxMarkerBytes)
			}
		}
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
	// NewComments counts the new comments a person wrote (no marker, not
	// the token's own account), when the comment count rose.
	NewComments int `json:"new_comments,omitempty"`
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
	persons := 0
	if after.Comments > before.Comments {
		// The count rose: only a new comment a person wrote is news.
		var note string
		if persons, note = newComments(p, in, after.Comments-before.Comments, after.Comments); note != "" {
			return sdk.Pending(note), nil
		}
		if persons == 0 {
			changed, said = withoutComments(changed, said)
		}
	}
	if len(changed) == 0 {
		if after != before {
			// Only comments the tool or the token's own account wrote:
			// recorded, so they are not looked at again, and not mailed.
			return sdk.Baseline(after), nil
		}
		return sdk.Pending("no change"), nil
	}
	return sdk.Changed(sdk.Outcome{
		Result:  "changed",
		Summary: fmt.Sprintf("%s#%d: %s", p.Repo, p.Number, strings.Join(said, ", ")),
		Detail:  Change{Changed: changed, Before: before, After: after, NewComments: persons},
	}, after), nil
}

// commentsPage is how many comments one GET of a GitHub thread asks for.
const commentsPage = 100

// comment is one comment as both forges list it.
type comment struct {
	Body *string `json:"body"`
	User *struct {
		Login string `json:"login"`
	} `json:"user"`
}

// newComments reads the newest k comments of a thread of total and counts
// those a person wrote: without any of the watch's markers, and not by the
// account the watch's token is (when the forge can say which that is;
// when it cannot, the markers alone decide). A non-empty note is "could
// not tell", and the caller keeps the baseline as it was.
//
// GitHub pages a thread, oldest first: the newest k are on the last page,
// and on the one before when k reaches past it; so at most two pages are
// read. Gitea lists a thread whole. New comments past what was read (more
// than one page and a bit in one interval) count as a person's: nothing
// says they are not.
func newComments(p Params, in sdk.Input, k, total int) (persons int, note string) {
	base := p.Base() + "/repos/" + p.Repo + "/issues/" + strconv.Itoa(p.Number) + "/comments"
	var thread []comment
	if p.Forge == forge.GitHub {
		last := (total + commentsPage - 1) / commentsPage
		first := last
		if onLast := total - (last-1)*commentsPage; k > onLast && last > 1 {
			first = last - 1
		}
		for page := first; page <= last; page++ {
			var cs []comment
			u := fmt.Sprintf("%s?per_page=%d&page=%d", base, commentsPage, page)
			if note := p.Get(in, u, "comments", &cs); note != "" {
				return 0, note
			}
			thread = append(thread, cs...)
		}
	} else if note := p.Get(in, base, "comments", &thread); note != "" {
		return 0, note
	}
	fresh := thread[max(0, len(thread)-k):]
	persons = k - len(fresh) // not read: a person's, for all anyone knows
	viewer, asked, known := "", false, false
	for _, c := range fresh {
		body := ""
		if c.Body != nil {
			body = *c.Body
		}
		if hasMarker(body, p.markers()) {
			continue
		}
		if c.User != nil && c.User.Login != "" {
			if !asked {
				viewer, known = viewerOf(p.Ref, in)
				asked = true
			}
			if known && strings.EqualFold(c.User.Login, viewer) {
				continue
			}
		}
		persons++
	}
	return persons, ""
}

// viewerOf asks the forge which account the watch's token authenticates
// as: one GET of {api_base}/user, which GitHub and Gitea answer alike. ok
// is false when the forge cannot tell: no token (an anonymous read has no
// account), a failed fetch, an answer that is not 200, or one without a
// login. It lives here, not in package forge, because only the ticket
// kind asks it.
func viewerOf(f forge.Ref, in sdk.Input) (login string, ok bool) {
	if f.TokenRef == "" {
		return "", false
	}
	var u struct {
		Login string `json:"login"`
	}
	if note := f.Get(in, f.Base()+"/user", "viewer", &u); note != "" || u.Login == "" {
		return "", false
	}
	return u.Login, true
}

func hasMarker(body string, markers []string) bool {
	for _, m := range markers {
		if m != "" && strings.Contains(body, m) {
			return true
		}
	}
	return false
}

// withoutComments drops "comments" from what diff found.
func withoutComments(changed, said []string) ([]string, []string) {
	for i, c := range changed {
		if c == "comments" {
			return append(changed[:i:i], changed[i+1:]...), append(said[:i:i], said[i+1:]...)
		}
	}
	return changed, said
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
