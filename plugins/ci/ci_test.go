package main

import (
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

const (
	repo = "octo/app"
	shaA = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
	shaB = "b1b2c3d4e5f60718293a4b5c6d7e8f9012345678" // the force-pushed commit
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fetcher gives a request up to 2 s: a hung path (Hang) costs its test
// that much, and a loaded machine never turns a slow answer into a timeout.
var fetcher = fakeforge.Fetcher{MaxTimeout: 2 * time.Second}

func grants(hosts ...string) sdk.Grants {
	return sdk.Grants{Capabilities: []string{"fetch"}, FetchHosts: hosts, Secrets: []string{"gh"}}
}

func runsPath(sha string) string   { return "/repos/" + repo + "/commits/" + sha + "/check-runs" }
func statusPath(sha string) string { return "/repos/" + repo + "/commits/" + sha + "/status" }

func run(name, status, conclusion string) fakeforge.CheckRun {
	return fakeforge.CheckRun{Name: name, Status: status, Conclusion: conclusion}
}

func done(name, conclusion string) fakeforge.CheckRun { return run(name, "completed", conclusion) }

func st(context, state string) fakeforge.Status {
	return fakeforge.Status{Context: context, State: state}
}

func observeParams(t *testing.T, p Params) abi.ObserveResponse {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sdk.NewHarness(Plugin).Observe(abi.ObserveRequest{Kind: Kind, WatchID: "w1", Now: now, Attempt: 1, Params: raw}, fetcher)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestObserve(t *testing.T) {
	many := make([]fakeforge.CheckRun, 150)
	for i := range many {
		many[i] = done(fmt.Sprintf("shard-%03d", i), "success")
	}
	many[131] = done("shard-131", "timed_out")

	tests := []struct {
		name    string
		forge   string
		sha     string // default shaA
		setup   func(f *fakeforge.Forge)
		status  string
		result  string   // settled: the result
		failing []string // settled: the failing checks
		note    string   // pending: a substring of the note
	}{
		{name: "no checks yet is pending, never success", forge: forge.GitHub,
			setup:  func(f *fakeforge.Forge) { f.SetCheckRuns(repo, shaA) },
			status: abi.StatusPending, note: "no checks yet on octo/app@a1b2c3d"},
		{name: "all passing", forge: forge.GitHub,
			setup: func(f *fakeforge.Forge) {
				f.SetCheckRuns(repo, shaA, done("build", "success"), done("docs", "skipped"), done("lint", "neutral"))
				f.SetStatuses(repo, shaA, st("ci/legacy", "success"))
			},
			status: abi.StatusSettled, result: "success", failing: []string{}},
		{name: "statuses alone count", forge: forge.GitHub,
			setup: func(f *fakeforge.Forge) {
				f.SetCheckRuns(repo, shaA)
				f.SetStatuses(repo, shaA, st("ci/legacy", "success"))
			},
			status: abi.StatusSettled, result: "success", failing: []string{}},
		{name: "mixed results fail, naming the failing", forge: forge.GitHub,
			setup: func(f *fakeforge.Forge) {
				f.SetCheckRuns(repo, shaA, done("build", "success"), done("lint", "failure"), done("e2e", "cancelled"),
					done("deploy", "action_required"), done("old", "stale"), done("slow", "timed_out"))
				f.SetStatuses(repo, shaA, st("ci/legacy", "error"), st("ci/other", "failure"), st("ci/ok", "success"))
			},
			status: abi.StatusSettled, result: "failure",
			failing: []string{"ci/legacy", "ci/other", "deploy", "e2e", "lint", "old", "slow"}},
		{name: "one still running", forge: forge.GitHub,
			setup: func(f *fakeforge.Forge) {
				f.SetCheckRuns(repo, shaA, done("build", "success"), run("test", "in_progress", ""), done("lint", "failure"))
			},
			status: abi.StatusPending, note: "1 of 3 checks still running on octo/app@a1b2c3d: test"},
		{name: "one queued", forge: forge.GitHub,
			setup:  func(f *fakeforge.Forge) { f.SetCheckRuns(repo, shaA, run("test", "queued", "")) },
			status: abi.StatusPending, note: "still running"},
		{name: "a pending status is running", forge: forge.GitHub,
			setup: func(f *fakeforge.Forge) {
				f.SetCheckRuns(repo, shaA, done("build", "success"))
				f.SetStatuses(repo, shaA, st("ci/legacy", "pending"))
			},
			status: abi.StatusPending, note: "still running on octo/app@a1b2c3d: ci/legacy"},
		{name: "a conclusion nobody knows is could not tell", forge: forge.GitHub,
			setup:  func(f *fakeforge.Forge) { f.SetCheckRuns(repo, shaA, done("build", "exploded")) },
			status: abi.StatusPending, note: "could not tell: conclusions this plugin does not know: build (exploded)"},
		{name: "force-push: sha B's results never answer a watch on sha A", forge: forge.GitHub,
			setup: func(f *fakeforge.Forge) {
				f.SetCheckRuns(repo, shaA)
				f.SetCheckRuns(repo, shaB, done("build", "success"))
				f.SetStatuses(repo, shaB, st("ci/legacy", "success"))
			},
			status: abi.StatusPending, note: "no checks yet"},
		{name: "force-push: a run reported for another head is not counted", forge: forge.GitHub,
			setup: func(f *fakeforge.Forge) {
				f.SetCheckRuns(repo, shaA, fakeforge.CheckRun{Name: "build", Status: "completed", Conclusion: "failure", HeadSHA: shaB})
			},
			status: abi.StatusPending, note: "no checks yet"},
		{name: "force-push: the old sha no longer known is could not tell", forge: forge.GitHub,
			setup:  func(f *fakeforge.Forge) { f.SetCheckRuns(repo, shaB, done("build", "success")) },
			status: abi.StatusPending, note: "could not tell: the forge answered 422 for the check runs"},
		{name: "the forge timing out is pending, never failure", forge: forge.GitHub,
			setup: func(f *fakeforge.Forge) {
				f.SetCheckRuns(repo, shaA, done("lint", "failure"))
				f.Hang(runsPath(shaA), time.Hour)
			},
			status: abi.StatusPending, note: "could not tell: fetching the check runs: timeout"},
		{name: "the status timing out is pending", forge: forge.GitHub,
			setup: func(f *fakeforge.Forge) {
				f.SetCheckRuns(repo, shaA, done("lint", "failure"))
				f.Hang(statusPath(shaA), time.Hour)
			},
			status: abi.StatusPending, note: "could not tell: fetching the commit status: timeout"},
		{name: "404 is pending", forge: forge.GitHub,
			setup:  func(f *fakeforge.Forge) { f.Fail(runsPath(shaA), 404, 0) },
			status: abi.StatusPending, note: "could not tell: the forge answered 404 for the check runs"},
		{name: "503 is pending", forge: forge.GitHub,
			setup: func(f *fakeforge.Forge) {
				f.SetCheckRuns(repo, shaA, done("lint", "failure"))
				f.Fail(statusPath(shaA), 503, 0)
			},
			status: abi.StatusPending, note: "could not tell: the forge answered 503 for the commit status"},
		{name: "429 is pending", forge: forge.GitHub,
			setup:  func(f *fakeforge.Forge) { f.Fail(runsPath(shaA), 429, time.Minute) },
			status: abi.StatusPending, note: "could not tell: the forge answered 429 for the check runs"},
		{name: "a failing run on the second page", forge: forge.GitHub,
			setup:  func(f *fakeforge.Forge) { f.SetCheckRuns(repo, shaA, many...) },
			status: abi.StatusSettled, result: "failure", failing: []string{"shard-131"}},
		{name: "an upper-case sha", forge: forge.GitHub, sha: strings.ToUpper(shaA),
			setup:  func(f *fakeforge.Forge) { f.SetCheckRuns(repo, shaA, done("build", "success")) },
			status: abi.StatusSettled, result: "success", failing: []string{}},

		{name: "gitea: no statuses yet", forge: forge.Gitea,
			setup:  func(f *fakeforge.Forge) { f.SetStatuses(repo, shaA) },
			status: abi.StatusPending, note: "no checks yet on octo/app@a1b2c3d"},
		{name: "gitea: success and a warning pass", forge: forge.Gitea,
			setup:  func(f *fakeforge.Forge) { f.SetStatuses(repo, shaA, st("build", "success"), st("lint", "warning")) },
			status: abi.StatusSettled, result: "success", failing: []string{}},
		{name: "gitea: failure and error fail, named", forge: forge.Gitea,
			setup: func(f *fakeforge.Forge) {
				f.SetStatuses(repo, shaA, st("build", "success"), st("test", "failure"), st("deploy", "error"))
			},
			status: abi.StatusSettled, result: "failure", failing: []string{"deploy", "test"}},
		{name: "gitea: one pending", forge: forge.Gitea,
			setup:  func(f *fakeforge.Forge) { f.SetStatuses(repo, shaA, st("build", "success"), st("test", "pending")) },
			status: abi.StatusPending, note: "1 of 2 checks still running on octo/app@a1b2c3d: test"},
		{name: "gitea: another sha's statuses never answer", forge: forge.Gitea,
			setup: func(f *fakeforge.Forge) {
				f.SetStatuses(repo, shaA)
				f.SetStatuses(repo, shaB, st("build", "success"))
			},
			status: abi.StatusPending, note: "no checks yet"},
		{name: "gitea: unknown commit is pending", forge: forge.Gitea,
			setup:  func(*fakeforge.Forge) {},
			status: abi.StatusPending, note: "could not tell: the forge answered 404 for the commit status"},
		{name: "gitea: timeout is pending", forge: forge.Gitea,
			setup: func(f *fakeforge.Forge) {
				f.SetStatuses(repo, shaA, st("test", "failure"))
				f.Hang(fakeforge.GiteaPrefix+statusPath(shaA), time.Hour)
			},
			status: abi.StatusPending, note: "could not tell: fetching the commit status: timeout"},
		{name: "gitea: 503 is pending", forge: forge.Gitea,
			setup: func(f *fakeforge.Forge) {
				f.SetStatuses(repo, shaA, st("test", "failure"))
				f.Fail(fakeforge.GiteaPrefix+statusPath(shaA), 503, 0)
			},
			status: abi.StatusPending, note: "could not tell: the forge answered 503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ff := fakeforge.New(t)
			tt.setup(ff)
			base := ff.URL()
			if tt.forge == forge.Gitea {
				base = ff.GiteaURL()
			}
			sha := tt.sha
			if sha == "" {
				sha = shaA
			}
			got := observeParams(t, Params{Ref: forge.Ref{Forge: tt.forge, APIBase: base, Repo: repo}, SHA: sha})
			if got.Status != tt.status {
				t.Fatalf("observe = %+v, want %s", got, tt.status)
			}
			for _, p := range ff.Paths() {
				if strings.Contains(p, shaB) {
					t.Errorf("a watch on sha A asked about sha B: %s", p)
				}
			}
			if tt.status == abi.StatusPending {
				if !strings.Contains(got.Note, tt.note) {
					t.Fatalf("note %q, want %q", got.Note, tt.note)
				}
				return
			}
			var d Detail
			if err := json.Unmarshal(got.Outcome.Detail, &d); err != nil {
				t.Fatal(err)
			}
			if got.Outcome.Result != tt.result || d.SHA != shaA || !reflect.DeepEqual(d.Failing, tt.failing) || len(d.Checks) == 0 {
				t.Fatalf("outcome %+v, detail %s", got.Outcome, got.Outcome.Detail)
			}
			for _, name := range tt.failing {
				if !strings.Contains(got.Outcome.Summary, name) && len(tt.failing) <= 10 {
					t.Errorf("summary %q does not name %s", got.Outcome.Summary, name)
				}
			}
		})
	}
}

// The outcome's detail is {sha, checks:[{name, conclusion}], failing}.
func TestOutcomeShape(t *testing.T) {
	ff := fakeforge.New(t)
	ff.SetCheckRuns(repo, shaA, done("lint", "failure"), done("build", "success"))
	got := observeParams(t, Params{Ref: forge.Ref{Forge: forge.GitHub, APIBase: ff.URL(), Repo: repo}, SHA: shaA})
	want := `{"sha":"` + shaA + `","checks":[{"name":"build","conclusion":"success"},{"name":"lint","conclusion":"failure"}],"failing":["lint"]}`
	if got.Outcome == nil || string(got.Outcome.Detail) != want ||
		got.Outcome.Summary != "1 of 2 checks failed on octo/app@a1b2c3d: lint" {
		t.Fatalf("outcome = %+v (%s)", got.Outcome, got.Outcome.Detail)
	}
}

// The requests: GitHub's media type and API version, and the token only
// when the watch names one, attached by the host, never in the params.
func TestRequests(t *testing.T) {
	for _, tt := range []struct {
		forge, tokenRef, auth string
	}{
		{forge.GitHub, "gh", "Bearer " + fakeforge.TestToken},
		{forge.GitHub, "", ""},
		{forge.Gitea, "gh", "Bearer " + fakeforge.TestToken},
	} {
		ff := fakeforge.New(t)
		ff.SetCheckRuns(repo, shaA, done("build", "success"))
		ff.SetStatuses(repo, shaA, st("legacy", "success"))
		base, prefix := ff.URL(), ""
		if tt.forge == forge.Gitea {
			base, prefix = ff.GiteaURL(), fakeforge.GiteaPrefix
		}
		got := observeParams(t, Params{Ref: forge.Ref{Forge: tt.forge, APIBase: base + "/", Repo: repo, TokenRef: tt.tokenRef}, SHA: shaA})
		if got.Status != abi.StatusSettled {
			t.Fatalf("%s: %+v", tt.forge, got)
		}
		paths := []string{prefix + statusPath(shaA)}
		if tt.forge == forge.GitHub {
			paths = append(paths, runsPath(shaA))
		}
		slices.Sort(paths)
		if !reflect.DeepEqual(ff.Paths(), paths) {
			t.Fatalf("%s asked for %v", tt.forge, ff.Paths())
		}
		for _, p := range paths {
			h := ff.Headers(p)
			if len(h) != 1 || h[0].Get("Authorization") != tt.auth {
				t.Fatalf("%s %s: %d requests, authorization %q", tt.forge, p, len(h), h[0].Get("Authorization"))
			}
			if tt.forge == forge.GitHub && (h[0].Get("Accept") != "application/vnd.github+json" || h[0].Get("X-GitHub-Api-Version") != "2022-11-28") {
				t.Fatalf("github headers %v", h[0])
			}
		}
	}
}

func TestAdmit(t *testing.T) {
	gh := grants("api.github.com", "*.example.org")
	ok := Params{Ref: forge.Ref{Forge: forge.GitHub, APIBase: "https://api.github.com", Repo: repo}, SHA: shaA}
	with := func(f func(*Params)) Params { p := ok; f(&p); return p }
	tests := []struct {
		name    string
		params  Params
		grants  sdk.Grants
		field   string
		setting string
	}{
		{name: "ok", params: ok, grants: gh},
		{name: "ok, api_base defaults to GitHub's", params: with(func(p *Params) { p.APIBase = "" }), grants: gh},
		{name: "ok, gitea under a wildcard grant", params: with(func(p *Params) {
			p.Forge, p.APIBase = forge.Gitea, "https://git.example.org/api/v1"
		}), grants: gh},
		{name: "ok, a granted secret", params: with(func(p *Params) { p.TokenRef = "gh" }), grants: gh},
		{name: "ok, an upper-case sha", params: with(func(p *Params) { p.SHA = strings.ToUpper(shaA) }), grants: gh},
		{name: "a branch", params: with(func(p *Params) { p.SHA = "main" }), grants: gh, field: "sha"},
		{name: "a short sha", params: with(func(p *Params) { p.SHA = shaA[:7] }), grants: gh, field: "sha"},
		{name: "not hex", params: with(func(p *Params) { p.SHA = strings.Repeat("g", 40) }), grants: gh, field: "sha"},
		{name: "too long", params: with(func(p *Params) { p.SHA = shaA + "0" }), grants: gh, field: "sha"},
		{name: "no sha", params: with(func(p *Params) { p.SHA = "" }), grants: gh, field: "sha"},
		{name: "gitlab", params: with(func(p *Params) { p.Forge = "gitlab" }), grants: gh, field: "forge"},
		{name: "gitea needs api_base", params: with(func(p *Params) { p.Forge, p.APIBase = forge.Gitea, "" }), grants: gh, field: "api_base"},
		{name: "api_base not a URL", params: with(func(p *Params) { p.APIBase = "api.github.com" }), grants: gh, field: "api_base"},
		{name: "api_base with a query", params: with(func(p *Params) { p.APIBase = "https://api.github.com/?x=1" }), grants: gh, field: "api_base"},
		{name: "api_base with credentials", params: with(func(p *Params) { p.APIBase = "https://u:p@api.github.com" }), grants: gh, field: "api_base"},
		{name: "api_base with an empty label", params: with(func(p *Params) { p.APIBase = "https://api..github.com" }), grants: gh, field: "api_base"},
		{name: "repo without owner", params: with(func(p *Params) { p.Repo = "app" }), grants: gh, field: "repo"},
		{name: "repo climbing", params: with(func(p *Params) { p.Repo = "../x" }), grants: gh, field: "repo"},
		{name: "a bad token_ref", params: with(func(p *Params) { p.TokenRef = "GH Token" }), grants: gh, field: "token_ref"},
		{name: "host not granted", params: with(func(p *Params) {
			p.Forge, p.APIBase = forge.Gitea, "https://gitea.example.com/api/v1"
		}), grants: gh, setting: "kinds.ci.fetch_hosts"},
		{name: "nothing granted", params: ok, grants: sdk.Grants{Capabilities: []string{"fetch"}}, setting: "kinds.ci.fetch_hosts"},
		{name: "secret not granted", params: with(func(p *Params) { p.TokenRef = "gitea" }), grants: gh, setting: "kinds.ci.secrets"},
	}
	h := sdk.NewHarness(Plugin)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, _ := json.Marshal(tt.params)
			got, err := h.Admit(abi.AdmitRequest{Kind: Kind, Params: raw, Grants: tt.grants})
			if err != nil {
				t.Fatal(err)
			}
			plugintest.CheckAdmit(t, got, tt.field, tt.setting, "not granted to kind ci")
			if tt.field == "sha" && !strings.Contains(got.Message, "a branch name is not a commit") {
				t.Fatalf("message %q does not say a branch is not a commit", got.Message)
			}
		})
	}
}

func TestSchema(t *testing.T) {
	example, _ := json.Marshal(Plugin.Example)
	plugintest.CheckSchema(t, schema, map[string]bool{
		string(example): true,
		`{"forge":"gitea","api_base":"https://git.example.org/api/v1","repo":"a/b","sha":"x","token_ref":"gitea"}`: true,
		`{"forge":"gitlab","repo":"a/b","sha":"x"}`:                                                                false,
		`{"forge":"github","repo":"a","sha":"x"}`:                                                                  false,
		`{"forge":"github","repo":"a/b"}`:                                                                          false,
		`{"forge":"github","repo":"a/b","sha":"x","branch":1}`:                                                     false,
		`{"forge":"github","repo":"a/b","sha":"x","token_ref":"Bad Name"}`:                                         false,
		`{"forge":"github","api_base":"ftp://x","repo":"a/b","sha":"x"}`:                                           false,
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
	if d.Kind != Kind || d.Standing || d.DefaultEvery != "30s" || !reflect.DeepEqual(d.Capabilities, []string{"fetch"}) {
		t.Fatalf("describe = %+v", d)
	}
}

// A call for another kind is a routing bug: an error, never pending.
func TestWrongKind(t *testing.T) {
	h := sdk.NewHarness(Plugin)
	raw, _ := json.Marshal(Plugin.Example)
	var wk *sdk.WrongKindError
	if _, err := h.Observe(abi.ObserveRequest{Kind: "ticket", Now: now, Params: raw}, fetcher); !errors.As(err, &wk) {
		t.Fatalf("observe of kind ticket = %v", err)
	}
	if _, err := h.Admit(abi.AdmitRequest{Kind: "ticket", Params: raw, Grants: grants("*")}); !errors.As(err, &wk) {
		t.Fatalf("admit of kind ticket = %v", err)
	}
}

// An admitted watch names the forge's API root as the destination it
// fetches: the default GitHub API from no param, an api_base from its
// param.
func TestAdmitNamesTheAPIBase(t *testing.T) {
	h := sdk.NewHarness(Plugin)
	gitea := Params{Ref: forge.Ref{Forge: forge.GitHub, Repo: repo}, SHA: shaA}
	gitea.Forge, gitea.APIBase = forge.Gitea, "http://127.0.0.1:3000/api/v1"
	for _, tt := range []struct {
		params Params
		want   abi.Destination
	}{
		{Params{Ref: forge.Ref{Forge: forge.GitHub, Repo: repo}, SHA: shaA}, abi.Destination{Target: forge.GitHubAPI}},
		{gitea, abi.Destination{Target: "http://127.0.0.1:3000/api/v1", Field: "api_base"}},
	} {
		raw, _ := json.Marshal(tt.params)
		got, err := h.Admit(abi.AdmitRequest{Kind: Kind, Params: raw, Grants: grants("*")})
		if err != nil || !got.OK || len(got.Destinations) != 1 || got.Destinations[0] != tt.want {
			t.Fatalf("%s: admit = %+v, %v; want %+v", raw, got, err, tt.want)
		}
	}
}

// An admitted watch names its commit's API URL as its partition key: the
// same commit however its params spell it (the host's and the
// repository's case, the SHA's case, a trailing slash on the API root)
// is one key; another commit, repository or forge is another.
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
	gh := Params{Ref: forge.Ref{Forge: forge.GitHub, Repo: repo}, SHA: shaA}
	if got, want := key(gh), forge.GitHubAPI+"/repos/"+strings.ToLower(repo)+"/commits/"+strings.ToLower(shaA); got != want {
		t.Fatalf("key %q, want %q", got, want)
	}
	spelled := gh
	spelled.APIBase, spelled.Repo, spelled.SHA = "HTTPS://API.GitHub.com/", strings.ToUpper(repo), strings.ToUpper(shaA)
	if key(spelled) != key(gh) {
		t.Fatalf("%q and %q: one commit, two keys", key(spelled), key(gh))
	}
	other := gh
	other.SHA = shaB
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
