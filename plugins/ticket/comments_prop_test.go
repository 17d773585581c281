package main

import (
	"encoding/json"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/internal/fakeforge"
	"github.com/vigilhq/vigil/plugins/internal/forge"
	"github.com/vigilhq/vigil/sdk/abi"
)

// Whatever the thread, its length, where a page ends, which comments
// carry a marker, who wrote them and whether the forge can say who the
// token is: a rise in the count is mailed exactly when one of the new
// comments is a person's (no marker; not the token's account when that
// is known), and the detail counts those.
func TestNewCommentsProperty(t *testing.T) {
	ff := fakeforge.New(t) // one forge; each draw sets the issue anew
	authors := []string{"ann", "vigil-bot", "Vigil-Bot", "bob"}
	rapid.Check(t, func(rt *rapid.T) {
		gitea := rapid.Bool().Draw(rt, "gitea")
		viewer := rapid.SampledFrom([]string{"", "vigil-bot"}).Draw(rt, "viewer")
		token := rapid.Bool().Draw(rt, "token")
		old := rapid.IntRange(0, 230).Draw(rt, "old")
		k := rapid.IntRange(1, 12).Draw(rt, "added")
		ff.SetViewer(viewer)

		draw := func(label string) fakeforge.Comment {
			c := fakeforge.Comment{Author: rapid.SampledFrom(authors).Draw(rt, label+" author"), Body: "text"}
			switch rapid.IntRange(0, 2).Draw(rt, label+" marker") {
			case 1:
				c.Body = "a\n" + DefaultMarkers[0]
			case 2:
				c.Body = DefaultMarkers[1] + " b"
			}
			return c
		}
		is := issue
		is.Thread = thread(old)
		is.Comments = old
		ff.SetIssue(repo, 7, is)
		ref := forge.Ref{Forge: forge.GitHub, APIBase: ff.URL(), Repo: repo}
		if gitea {
			ref = forge.Ref{Forge: forge.Gitea, APIBase: ff.GiteaURL(), Repo: repo}
		}
		if token {
			ref.TokenRef = "gh"
		}
		p := Params{Ref: ref, Number: 7}
		before := firstLook(t, p)

		want := 0
		for i := range k {
			c := draw("new " + string(rune('a'+i)))
			is.Thread = append(is.Thread, c)
			marked := strings.Contains(c.Body, "<!-- issue-ops:")
			own := token && viewer != "" && strings.EqualFold(c.Author, viewer)
			if !marked && !own {
				want++
			}
		}
		is.Comments = len(is.Thread)
		ff.SetIssue(repo, 7, is)
		got := observeWith(t, p, before)
		if want == 0 {
			if got.Status != abi.StatusPending || got.Outcome != nil || len(got.Baseline) == 0 {
				rt.Fatalf("no person's comment among %d new: %+v", k, got)
			}
			return
		}
		var c Change
		if got.Status != abi.StatusChanged || json.Unmarshal(got.Outcome.Detail, &c) != nil || c.NewComments != want {
			rt.Fatalf("%d of %d new comments are a person's: %+v (detail %s)", want, k, got, got.Outcome)
		}
	})
}
