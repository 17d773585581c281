package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeforge"
	"github.com/vigilhq/vigil/plugins/internal/forge"
	"github.com/vigilhq/vigil/plugins/internal/plugintest"
	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

const repo = "octo/app"

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fetcher gives a request up to 2 s: a hung path (Hang) costs its test
// that much, and a loaded machine never turns a slow answer into a timeout.
var fetcher = fakeforge.Fetcher{MaxTimeout: 2 * time.Second}

func grants(hosts ...string) sdk.Grants {
	return sdk.Grants{Capabilities: []string{"fetch"}, FetchHosts: hosts, Secrets: []string{"gh"}}
}

var issue = fakeforge.Issue{Title: "Crash on start", State: "open", Body: "steps: run it", Comments: 2}

func observeWith(t *testing.T, p Params, baseline json.RawMessage) abi.ObserveResponse {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sdk.NewHarness(Plugin).Observe(abi.ObserveRequest{
		Kind: Kind, WatchID: "w1", Now: now, Attempt: 2, Params: raw, Baseline: baseline,
	}, fetcher)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// firstLook observes with no baseline and returns the baseline recorded.
func firstLook(t *testing.T, p Params) json.RawMessage {
	t.Helper()
	got := observeWith(t, p, nil)
	if got.Status != abi.StatusPending || got.Outcome != nil || len(got.Baseline) == 0 {
		t.Fatalf("first look = %+v, want a silent baseline", got)
	}
	return got.Baseline
}

func TestFirstLookIsSilent(t *testing.T) {
	ff := fakeforge.New(t)
	ff.SetIssue(repo, 7, issue)
	base := firstLook(t, Params{Ref: forge.Ref{Forge: forge.GitHub, APIBase: ff.URL(), Repo: repo}, Number: 7})
	var s Snapshot
	if err := json.Unmarshal(base, &s); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(issue.Body))
	want := Snapshot{Title: "Crash on start", State: "open", BodySHA256: hex.EncodeToString(sum[:]), Comments: 2}
	if s != want {
		t.Fatalf("snapshot %+v", s)
	}
}

func TestChanges(t *testing.T) {
	tests := []struct {
		name    string
		forge   string
		edit    func(is *fakeforge.Issue)
		changed []string // nil: no change
		summary string
	}{
		{"identical is no change", forge.GitHub, func(*fakeforge.Issue) {}, nil, ""},
		{"title", forge.GitHub, func(is *fakeforge.Issue) { is.Title = "Crash on start (macOS)" }, []string{"title"},
			`octo/app#7: title changed to "Crash on start (macOS)"`},
		{"state", forge.GitHub, func(is *fakeforge.Issue) { is.State = "closed" }, []string{"state"},
			"octo/app#7: state open → closed"},
		{"body", forge.GitHub, func(is *fakeforge.Issue) { is.Body = "steps: run it twice" }, []string{"body"},
			"octo/app#7: body edited"},
		{"body removed", forge.GitHub, func(is *fakeforge.Issue) { is.Body = "" }, []string{"body"},
			"octo/app#7: body edited"},
		{"comments", forge.GitHub, func(is *fakeforge.Issue) { is.Comments = 3 }, []string{"comments"},
			"octo/app#7: comments 2 → 3"},
		{"draft", forge.GitHub, func(is *fakeforge.Issue) { is.Draft = true }, []string{"draft"},
			"octo/app#7: marked draft"},
		{"several at once", forge.GitHub, func(is *fakeforge.Issue) { is.Title, is.State = "Fixed", "closed" }, []string{"title", "state"},
			`octo/app#7: title changed to "Fixed", state open → closed`},
		{"gitea: identical", forge.Gitea, func(*fakeforge.Issue) {}, nil, ""},
		{"gitea: state and comments", forge.Gitea, func(is *fakeforge.Issue) { is.State, is.Comments = "closed", 5 },
			[]string{"state", "comments"}, "octo/app#7: state open → closed, comments 2 → 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ff := fakeforge.New(t)
			ff.SetIssue(repo, 7, issue)
			base := ff.URL()
			if tt.forge == forge.Gitea {
				base = ff.GiteaURL()
			}
			p := Params{Ref: forge.Ref{Forge: tt.forge, APIBase: base, Repo: repo}, Number: 7}
			before := firstLook(t, p)

			edited := issue
			tt.edit(&edited)
			ff.SetIssue(repo, 7, edited)
			got := observeWith(t, p, before)
			if tt.changed == nil {
				want := abi.ObserveResponse{Status: abi.StatusPending, Note: "no change"}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("observe = %+v, want %+v", got, want)
				}
				return
			}
			if got.Status != abi.StatusChanged || got.Outcome.Result != "changed" || got.Outcome.Summary != tt.summary {
				t.Fatalf("observe = %+v (outcome %+v)", got, got.Outcome)
			}
			var c Change
			if err := json.Unmarshal(got.Outcome.Detail, &c); err != nil {
				t.Fatal(err)
			}
			var b, a Snapshot
			if err := json.Unmarshal(before, &b); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got.Baseline, &a); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Changed, tt.changed) || c.Before != b || c.After != a {
				t.Fatalf("detail %s, baseline %s", got.Outcome.Detail, got.Baseline)
			}
			// The new baseline answers the next look with no change.
			if again := observeWith(t, p, got.Baseline); again.Status != abi.StatusPending || again.Note != "no change" {
				t.Fatalf("after the change = %+v", again)
			}
		})
	}
}

// Every "could not tell" is pending with a note, keeps the baseline as it
// was (none in the answer) and never reads as a change.
func TestCouldNotTell(t *testing.T) {
	path := "/repos/" + repo + "/issues/7"
	tests := []struct {
		name  string
		setup func(f *fakeforge.Forge)
		note  string
	}{
		{"timeout", func(f *fakeforge.Forge) { f.Hang(path, time.Hour) }, "could not tell: fetching the issue: timeout"},
		{"503", func(f *fakeforge.Forge) { f.Fail(path, 503, 0) }, "could not tell: the forge answered 503 for the issue"},
		{"429", func(f *fakeforge.Forge) { f.Fail(path, 429, time.Minute) }, "could not tell: the forge answered 429 for the issue"},
		{"404", func(f *fakeforge.Forge) { f.Fail(path, 404, 0) }, "could not tell: the forge answered 404 for the issue (not there, or the token cannot see it)"},
		{"not JSON", func(f *fakeforge.Forge) { f.SetPage(path, 200, `<html>`) }, "could not tell: the issue did not decode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ff := fakeforge.New(t)
			ff.SetIssue(repo, 7, issue)
			p := Params{Ref: forge.Ref{Forge: forge.GitHub, APIBase: ff.URL(), Repo: repo}, Number: 7}
			base := firstLook(t, p)
			tt.setup(ff)
			for _, b := range []json.RawMessage{nil, base} {
				got := observeWith(t, p, b)
				want := abi.ObserveResponse{Status: abi.StatusPending, Note: tt.note}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("observe = %+v, want %+v", got, want)
				}
			}
		})
	}
}

// An answer that is not a ticket (no title or state) is never a change:
// after a real baseline it could not tell, and a baseline taken of one is
// replaced by the first real answer silently.
func TestNotATicket(t *testing.T) {
	path := "/repos/" + repo + "/issues/7"
	ff := fakeforge.New(t)
	p := Params{Ref: forge.Ref{Forge: forge.GitHub, APIBase: ff.URL(), Repo: repo}, Number: 7}

	ff.SetIssue(repo, 7, issue)
	real := firstLook(t, p)
	ff.SetPage(path, 200, `{"message":"hello"}`)
	want := abi.ObserveResponse{Status: abi.StatusPending, Note: "could not tell: the answer has no title or state"}
	if got := observeWith(t, p, real); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a real baseline = %+v, want %+v", got, want)
	}

	placeholder := firstLook(t, p)
	if got := observeWith(t, p, placeholder); got.Status != abi.StatusPending || got.Outcome != nil {
		t.Fatalf("the same non-ticket again = %+v", got)
	}
	ff.SetPage(path, 200, `{"title":"Crash on start","state":"open","body":"steps: run it","comments":2}`)
	got := observeWith(t, p, placeholder)
	if got.Status != abi.StatusPending || got.Outcome != nil || string(got.Baseline) != string(real) {
		t.Fatalf("the first real answer after a non-ticket = %+v, want the real snapshot recorded silently", got)
	}
}

// One GET of the issue per look, with the token when the watch names one.
func TestRequest(t *testing.T) {
	ff := fakeforge.New(t)
	ff.SetIssue(repo, 7, issue)
	firstLook(t, Params{Ref: forge.Ref{Forge: forge.GitHub, APIBase: ff.URL(), Repo: repo, TokenRef: "gh"}, Number: 7})
	path := "/repos/" + repo + "/issues/7"
	h := ff.Headers(path)
	if !reflect.DeepEqual(ff.Paths(), []string{path}) || len(h) != 1 ||
		h[0].Get("Authorization") != "Bearer "+fakeforge.TestToken || h[0].Get("X-GitHub-Api-Version") != "2022-11-28" {
		t.Fatalf("paths %v, headers %v", ff.Paths(), h)
	}
}

func TestAdmit(t *testing.T) {
	gh := grants("api.github.com")
	ok := Params{Ref: forge.Ref{Forge: forge.GitHub, Repo: repo}, Number: 7}
	with := func(f func(*Params)) Params { p := ok; f(&p); return p }
	tests := []struct {
		name    string
		params  Params
		grants  sdk.Grants
		field   string
		setting string
	}{
		{name: "ok", params: ok, grants: gh},
		{name: "ok, a granted secret", params: with(func(p *Params) { p.TokenRef = "gh" }), grants: gh},
		{name: "number 0", params: with(func(p *Params) { p.Number = 0 }), grants: gh, field: "number"},
		{name: "ok, markers of its own", params: with(func(p *Params) { p.IgnoreMarkers = &[]string{"[bot]"} }), grants: gh},
		{name: "ok, no markers", params: with(func(p *Params) { p.IgnoreMarkers = &[]string{} }), grants: gh},
		{name: "an empty marker", params: with(func(p *Params) { p.IgnoreMarkers = &[]string{"[bot]", ""} }), grants: gh, field: "ignore_markers"},
		{name: "a marker too long", params: with(func(p *Params) { p.IgnoreMarkers = &[]string{strings.Repeat("x", 257)} }), grants: gh, field: "ignore_markers"},
		{name: "too many markers", params: with(func(p *Params) {
			ms := make([]string, 17)
			for i := range ms {
				ms[i] = "m"
			}
			p.IgnoreMarkers = &ms
		}), grants: gh, field: "ignore_markers"},
		{name: "bad forge", params: with(func(p *Params) { p.Forge = "jira" }), grants: gh, field: "forge"},
		{name: "gitea needs api_base", params: with(func(p *Params) { p.Forge = forge.Gitea }), grants: gh, field: "api_base"},
		{name: "bad repo", params: with(func(p *Params) { p.Repo = "a/b/c" }), grants: gh, field: "repo"},
		{name: "host not granted", params: with(func(p *Params) {
			p.Forge, p.APIBase = forge.Gitea, "https://gitea.example.com/api/v1"
		}), grants: gh, setting: "kinds.ticket.fetch_hosts"},
		{name: "secret not granted", params: with(func(p *Params) { p.TokenRef = "gitea" }), grants: gh, setting: "kinds.ticket.secrets"},
	}
	h := sdk.NewHarness(Plugin)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, _ := json.Marshal(tt.params)
			got, err := h.Admit(abi.AdmitRequest{Kind: Kind, Params: raw, Grants: tt.grants})
			if err != nil {
				t.Fatal(err)
			}
			plugintest.CheckAdmit(t, got, tt.field, tt.setting, "")
		})
	}
}

func TestSchema(t *testing.T) {
	example, _ := json.Marshal(Plugin.Example)
	plugintest.CheckSchema(t, schema, map[string]bool{
		string(example): true,
		`{"forge":"gitea","api_base":"https://git.example.org/api/v1","repo":"a/b","number":1,"token_ref":"gitea"}`: true,
		`{"forge":"github","repo":"a/b","number":0}`:                                                                false,
		`{"forge":"github","repo":"a/b","number":"7"}`:                                                              false,
		`{"forge":"github","repo":"a/b"}`:                                                                           false,
		`{"forge":"github","repo":"a/b","number":7,"x":true}`:                                                       false,
		`{"forge":"github","repo":"a/b","number":7,"ignore_markers":["<!-- mine -->"]}`:                             true,
		`{"forge":"github","repo":"a/b","number":7,"ignore_markers":[]}`:                                            true,
		`{"forge":"github","repo":"a/b","number":7,"ignore_markers":[""]}`:                                          false,
		`{"forge":"github","repo":"a/b","number":7,"ignore_markers":"<!-- mine -->"}`:                               false,
	})
	if err := admit(Plugin.Example, grants("api.github.com")); err != nil {
		t.Errorf("the example does not admit: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	d, err := sdk.NewHarness(Plugin).Describe()
	if err != nil {
		t.Fatal(err)
	}
	if d.Kind != Kind || !d.Standing || d.DefaultEvery != "1m0s" || !reflect.DeepEqual(d.Capabilities, []string{"fetch"}) {
		t.Fatalf("describe = %+v", d)
	}
}

// A call for another kind is a routing bug: an error, never pending.
func TestWrongKind(t *testing.T) {
	h := sdk.NewHarness(Plugin)
	raw, _ := json.Marshal(Plugin.Example)
	var wk *sdk.WrongKindError
	if _, err := h.Observe(abi.ObserveRequest{Kind: "ci", Now: now, Params: raw}, fetcher); !errors.As(err, &wk) {
		t.Fatalf("observe of kind ci = %v", err)
	}
	if _, err := h.Admit(abi.AdmitRequest{Kind: "ci", Params: raw, Grants: grants("*")}); !errors.As(err, &wk) {
		t.Fatalf("admit of kind ci = %v", err)
	}
}

// An admitted watch names the forge's API root as the destination it
// fetches: the default GitHub API from no param, an api_base from its
// param.
func TestAdmitNamesTheAPIBase(t *testing.T) {
	h := sdk.NewHarness(Plugin)
	gitea := Params{Ref: forge.Ref{Forge: forge.GitHub, Repo: repo}, Number: 7}
	gitea.Forge, gitea.APIBase = forge.Gitea, "http://127.0.0.1:3000/api/v1"
	for _, tt := range []struct {
		params Params
		want   abi.Destination
	}{
		{Params{Ref: forge.Ref{Forge: forge.GitHub, Repo: repo}, Number: 7}, abi.Destination{Target: forge.GitHubAPI}},
		{gitea, abi.Destination{Target: "http://127.0.0.1:3000/api/v1", Field: "api_base"}},
	} {
		raw, _ := json.Marshal(tt.params)
		got, err := h.Admit(abi.AdmitRequest{Kind: Kind, Params: raw, Grants: grants("*")})
		if err != nil || !got.OK || len(got.Destinations) != 1 || got.Destinations[0] != tt.want {
			t.Fatalf("%s: admit = %+v, %v; want %+v", raw, got, err, tt.want)
		}
	}
}

// sticky and handover are comments an issue-ops tool writes, each with
// one of the default markers.
var (
	sticky   = fakeforge.Comment{Author: "vigil-bot", Body: "status: building\n<!-- issue-ops:sticky -->"}
	handover = fakeforge.Comment{Author: "someone", Body: "<!-- issue-ops:handover -->\nhanded to agent-2"}
)

// thread is n comments by people, oldest first.
func thread(n int) []fakeforge.Comment {
	out := make([]fakeforge.Comment, n)
	for i := range out {
		out[i] = fakeforge.Comment{Author: "ann", Body: fmt.Sprintf("comment %d", i+1)}
	}
	return out
}

// What a new comment is: only one a person wrote counts. A comment that
// holds an issue-ops marker (the defaults, or the watch's own) or that
// the token's own account wrote is recorded in the baseline silently.
// Where the forge cannot say which account the token is (no token, or
// /user refused), the markers alone decide, and still keep the tool's
// comments out.
func TestNewComments(t *testing.T) {
	markers := func(ms ...string) *[]string { ms = append([]string{}, ms...); return &ms }
	tests := []struct {
		name    string
		forge   string
		token   bool   // the watch names a token
		viewer  string // who /user says the token is; "" cannot tell
		ignore  *[]string
		old     int                 // comments before, by people
		added   []fakeforge.Comment // the new ones
		edit    func(is *fakeforge.Issue)
		changed []string // nil: silent
		persons int
	}{
		{name: "a person's comment", old: 2, added: thread(1), changed: []string{"comments"}, persons: 1},
		{name: "the sticky marker", old: 2, added: []fakeforge.Comment{sticky}},
		{name: "the handover marker", old: 2, added: []fakeforge.Comment{handover}},
		{name: "the token's own login", token: true, viewer: "vigil-bot", old: 2,
			added: []fakeforge.Comment{{Author: "vigil-bot", Body: "done"}}},
		{name: "the token's own login, in another case", token: true, viewer: "Vigil-Bot", old: 2,
			added: []fakeforge.Comment{{Author: "vigil-bot", Body: "done"}}},
		{name: "another login than the token's", token: true, viewer: "vigil-bot", old: 2,
			added: []fakeforge.Comment{{Author: "ann", Body: "done"}}, changed: []string{"comments"}, persons: 1},
		{name: "markers alone are enough when the forge cannot report its login", token: true, old: 2,
			added: []fakeforge.Comment{sticky}},
		{name: "markers alone are enough with no token", old: 2, added: []fakeforge.Comment{sticky, handover}},
		{name: "the forge cannot report its login: an unmarked comment counts", token: true, old: 2,
			added: []fakeforge.Comment{{Author: "vigil-bot", Body: "done"}}, changed: []string{"comments"}, persons: 1},
		{name: "the watch's own markers", ignore: markers("[bot]"), old: 2,
			added: []fakeforge.Comment{{Author: "x", Body: "[bot] nightly"}}},
		{name: "the watch's own markers replace the defaults", ignore: markers("[bot]"), old: 2,
			added: []fakeforge.Comment{sticky}, changed: []string{"comments"}, persons: 1},
		{name: "no markers at all", ignore: markers(), old: 2,
			added: []fakeforge.Comment{sticky}, changed: []string{"comments"}, persons: 1},
		{name: "a marker and a person's", old: 2, added: append([]fakeforge.Comment{sticky}, thread(1)...),
			changed: []string{"comments"}, persons: 1},
		{name: "a marker beside a title change", old: 2, added: []fakeforge.Comment{sticky},
			edit: func(is *fakeforge.Issue) { is.Title = "Crash on start (macOS)" }, changed: []string{"title"}},
		{name: "two markers across a page boundary", old: 99, added: []fakeforge.Comment{sticky, handover}},
		{name: "a person's comment on the last page", old: 150, added: thread(1), changed: []string{"comments"}, persons: 1},
		{name: "gitea: a marker", forge: forge.Gitea, old: 2, added: []fakeforge.Comment{sticky}},
		{name: "gitea: a person's comment", forge: forge.Gitea, old: 2, added: thread(1), changed: []string{"comments"}, persons: 1},
		{name: "gitea: the token's own login", forge: forge.Gitea, token: true, viewer: "vigil-bot", old: 2,
			added: []fakeforge.Comment{{Author: "vigil-bot", Body: "done"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ff := fakeforge.New(t)
			ff.SetViewer(tt.viewer)
			is := issue
			is.Thread, is.Comments = thread(tt.old), tt.old
			ff.SetIssue(repo, 7, is)
			ref := forge.Ref{Forge: forge.GitHub, APIBase: ff.URL(), Repo: repo}
			if tt.forge == forge.Gitea {
				ref = forge.Ref{Forge: forge.Gitea, APIBase: ff.GiteaURL(), Repo: repo}
			}
			if tt.token {
				ref.TokenRef = "gh"
			}
			p := Params{Ref: ref, Number: 7, IgnoreMarkers: tt.ignore}
			before := firstLook(t, p)

			is.Thread = append(slices.Clone(is.Thread), tt.added...)
			is.Comments = len(is.Thread)
			if tt.edit != nil {
				tt.edit(&is)
			}
			ff.SetIssue(repo, 7, is)
			got := observeWith(t, p, before)
			var after Snapshot
			if err := json.Unmarshal(got.Baseline, &after); err != nil || after.Comments != is.Comments {
				t.Fatalf("observe = %+v: want the new count %d in the baseline (%v)", got, is.Comments, err)
			}
			if tt.changed == nil {
				if got.Status != abi.StatusPending || got.Outcome != nil {
					t.Fatalf("observe = %+v, want the new count recorded silently", got)
				}
			} else {
				if got.Status != abi.StatusChanged {
					t.Fatalf("observe = %+v, want changed %v", got, tt.changed)
				}
				var c Change
				if err := json.Unmarshal(got.Outcome.Detail, &c); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(c.Changed, tt.changed) || c.NewComments != tt.persons {
					t.Fatalf("detail %s, want changed %v, %d new by a person", got.Outcome.Detail, tt.changed, tt.persons)
				}
			}
			// Recorded, the same thread again is no change, and lists
			// nothing more.
			n := len(ff.Paths())
			if again := observeWith(t, p, got.Baseline); again.Status != abi.StatusPending || again.Note != "no change" {
				t.Fatalf("after = %+v", again)
			}
			if len(ff.Paths()) != n {
				t.Fatalf("an unchanged count listed the thread: %v", ff.Paths())
			}
		})
	}
}

// The thread is read only when the count rises, and the token's account
// is asked for only when a new comment carries no marker, once a look.
func TestNewCommentsReadsOnlyWhatItNeeds(t *testing.T) {
	ff := fakeforge.New(t)
	ff.SetViewer("vigil-bot")
	is := issue
	is.Thread, is.Comments = thread(2), 2
	ff.SetIssue(repo, 7, is)
	p := Params{Ref: forge.Ref{Forge: forge.GitHub, APIBase: ff.URL(), Repo: repo, TokenRef: "gh"}, Number: 7}
	base := firstLook(t, p)
	comments := "/repos/" + repo + "/issues/7/comments"
	if ff.Requests(comments) != 0 || ff.Requests("/user") != 0 {
		t.Fatalf("the first look read %v", ff.Paths())
	}

	is.Thread = append(slices.Clone(is.Thread), sticky, handover)
	is.Comments = 4
	ff.SetIssue(repo, 7, is)
	got := observeWith(t, p, base)
	if ff.Requests(comments) != 1 || ff.Requests("/user") != 0 || got.Outcome != nil {
		t.Fatalf("marked comments: %d thread reads, %d viewer reads, %+v", ff.Requests(comments), ff.Requests("/user"), got)
	}
	is.Thread = append(slices.Clone(is.Thread), fakeforge.Comment{Author: "vigil-bot", Body: "a"}, fakeforge.Comment{Author: "ann", Body: "b"})
	is.Comments = 6
	ff.SetIssue(repo, 7, is)
	got = observeWith(t, p, got.Baseline)
	if ff.Requests(comments) != 2 || ff.Requests("/user") != 1 || got.Status != abi.StatusChanged {
		t.Fatalf("unmarked comments: %d thread reads, %d viewer reads, %+v", ff.Requests(comments), ff.Requests("/user"), got)
	}
}

// A thread that cannot be read is "could not tell": pending with a note,
// and the baseline stays as it was, so the comments are looked at again.
func TestNewCommentsCouldNotTell(t *testing.T) {
	ff := fakeforge.New(t)
	is := issue
	is.Thread, is.Comments = thread(2), 2
	ff.SetIssue(repo, 7, is)
	p := Params{Ref: forge.Ref{Forge: forge.GitHub, APIBase: ff.URL(), Repo: repo}, Number: 7}
	base := firstLook(t, p)
	is.Thread, is.Comments = thread(3), 3
	ff.SetIssue(repo, 7, is)
	ff.Fail("/repos/"+repo+"/issues/7/comments", 503, 0)
	got := observeWith(t, p, base)
	want := abi.ObserveResponse{Status: abi.StatusPending, Note: "could not tell: the forge answered 503 for the comments"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("observe = %+v, want %+v", got, want)
	}
}

// What a person did not change is no change: an edit of the assignees
// (the tool assigns itself) or of the last-updated time (a sticky edit
// moves it), alone, is silent and records nothing.
func TestAssigneesAndUpdatedAtAreSilent(t *testing.T) {
	for name, edit := range map[string]func(is *fakeforge.Issue){
		"assignees":    func(is *fakeforge.Issue) { is.Assignees = []string{"vigil-bot", "ann"} },
		"updated_at":   func(is *fakeforge.Issue) { is.UpdatedAt = now.Add(time.Minute) },
		"both at once": func(is *fakeforge.Issue) { is.Assignees, is.UpdatedAt = []string{"vigil-bot"}, now.Add(time.Hour) },
	} {
		t.Run(name, func(t *testing.T) {
			ff := fakeforge.New(t)
			is := issue
			is.Assignees, is.UpdatedAt = []string{"ann"}, now
			ff.SetIssue(repo, 7, is)
			p := Params{Ref: forge.Ref{Forge: forge.GitHub, APIBase: ff.URL(), Repo: repo}, Number: 7}
			before := firstLook(t, p)
			edit(&is)
			ff.SetIssue(repo, 7, is)
			want := abi.ObserveResponse{Status: abi.StatusPending, Note: "no change"}
			if got := observeWith(t, p, before); !reflect.DeepEqual(got, want) {
				t.Fatalf("observe = %+v, want %+v", got, want)
			}
		})
	}
}

// Without a token there is no account to ask about: an unmarked comment
// counts, and /user is never asked.
func TestNoTokenAsksNoViewer(t *testing.T) {
	ff := fakeforge.New(t)
	ff.SetViewer("vigil-bot")
	is := issue
	is.Thread, is.Comments = thread(2), 2
	ff.SetIssue(repo, 7, is)
	p := Params{Ref: forge.Ref{Forge: forge.GitHub, APIBase: ff.URL(), Repo: repo}, Number: 7}
	base := firstLook(t, p)
	is.Thread, is.Comments = append(thread(2), fakeforge.Comment{Author: "vigil-bot", Body: "done"}), 3
	ff.SetIssue(repo, 7, is)
	if got := observeWith(t, p, base); got.Status != abi.StatusChanged || ff.Requests("/user") != 0 {
		t.Fatalf("observe = %+v, %d viewer reads", got, ff.Requests("/user"))
	}
}

// An admitted watch names its ticket's API URL as its partition key: the
// same ticket however its params spell it is one key; another number,
// repository or forge is another.
func TestAdmitNamesThePartitionKey(t *testing.T) {
	h := sdk.NewHarness(Plugin)
	key := func(p Params) string {
		t.Helper()
		raw, _ := json.Marshal(p)
		got, err := h.Admit(abi.AdmitRequest{Kind: Kind, Params: raw, Grants: grants("*")})
		if err != nil || !got.OK {
			t.Fatalf("%s: admit = %+v, %v", raw, got, err)
		}
		return got.PartitionKey
	}
	gh := Params{Ref: forge.Ref{Forge: forge.GitHub, Repo: repo}, Number: 7}
	if got, want := key(gh), forge.GitHubAPI+"/repos/"+strings.ToLower(repo)+"/issues/7"; got != want {
		t.Fatalf("key %q, want %q", got, want)
	}
	spelled := gh
	spelled.APIBase, spelled.Repo = "https://API.GITHUB.COM/", strings.ToUpper(repo)
	markers := []string{"x"}
	spelled.IgnoreMarkers = &markers // what the watch ignores is not what it reads
	if key(spelled) != key(gh) {
		t.Fatalf("%q and %q: one ticket, two keys", key(spelled), key(gh))
	}
	other := gh
	other.Number = 8
	gitea := gh
	gitea.Forge, gitea.APIBase = forge.Gitea, "https://gitea.example.com/api/v1"
	otherRepo := gh
	otherRepo.Repo = "someone/else"
	seen := map[string]bool{}
	for _, p := range []Params{gh, other, gitea, otherRepo} {
		k := key(p)
		if seen[k] {
			t.Fatalf("%+v shares the key %q", p, k)
		}
		seen[k] = true
	}
}
