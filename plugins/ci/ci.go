package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigilhq/vigil/plugins/internal/forge"
	"github.com/vigilhq/vigil/plugins/internal/note"
	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

// Kind is the predicate's name.
const Kind = "ci"

// Params name one commit of one repository.
type Params struct {
	forge.Ref
	// SHA is the commit's full SHA: 40 hex digits, never a branch.
	SHA string `json:"sha"`
}

// The sha has no pattern here on purpose: admit's refusal says why a
// branch name is refused, where a schema's would only quote the pattern.
const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    ` + forge.SchemaProperties + `,
    "sha": {"type": "string", "minLength": 1, "maxLength": 256,
            "description": "the commit's full 40-hex-digit SHA; a branch name is not a commit"}
  },
  "required": ["forge", "repo", "sha"],
  "additionalProperties": false
}`

// Plugin is the ci kind.
var Plugin = sdk.Plugin[Params]{
	Kind:         Kind,
	Version:      "1.0.0",
	Summary:      "settles once every check on a commit has finished: success, or failure naming the failing checks",
	DefaultEvery: 30 * time.Second,
	Schema:       schema,
	Capabilities: []string{abi.CapabilityFetch},
	Example: Params{Ref: forge.Ref{Forge: forge.GitHub, APIBase: forge.GitHubAPI, Repo: "vigilhq/vigil"},
		SHA: "0123456789abcdef0123456789abcdef01234567"},
	Admit:        admit,
	Observe:      observe,
	Destinations: func(p Params) []sdk.Destination { return p.Ref.Destinations() },
	// The commit: every watch on it lands on one node of a cluster, and
	// an event about it (wake) wakes every watch on it.
	PartitionKey: func(p Params) string { return commitKey(p.Ref, p.SHA) },
	Wake:         wake,
}

// admit checks configuration only; it never asks the forge whether the
// commit exists (a push may still be on its way).
func admit(p Params, g sdk.Grants) error {
	if !isSHA(p.SHA) {
		return sdk.InvalidParams("sha", "%q is not a commit SHA: want the full 40 hex digits (a branch name is not a commit: it moves, and the answer would be about another commit)", note.Clip(p.SHA))
	}
	return p.Ref.Admit(Kind, g)
}

func isSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// state is where one check stands.
type state int

const (
	running state = iota
	passed
	failed
	unknown // a conclusion this plugin does not know: could not tell
)

type check struct {
	Name       string `json:"name"`
	Conclusion string `json:"conclusion"`
	state      state
}

// Detail is the settled outcome's detail.
type Detail struct {
	SHA     string   `json:"sha"`
	Checks  []check  `json:"checks"`
	Failing []string `json:"failing"`
}

// maxPages bounds one observation's reads of a paginated list.
const maxPages = 10

// observe reads every check on the commit and answers.
func observe(p Params, in sdk.Input) (sdk.Result, error) {
	sha := strings.ToLower(p.SHA)
	f := p.Ref
	commit := f.Base() + "/repos/" + p.Repo + "/commits/" + sha
	var checks []check
	var note string
	if f.Forge == forge.GitHub {
		checks, note = gitHubChecks(in, f, commit, sha)
	} else {
		checks, note = statuses(in, f, commit, sha, "limit=50", giteaState)
	}
	if note != "" {
		return sdk.Pending(note), nil
	}
	slices.SortStableFunc(checks, func(a, b check) int { return strings.Compare(a.Name, b.Name) })
	return judge(p.Repo, sha, checks), nil
}

// judge is the rule: terminal needs at least one check and none running.
func judge(repo, sha string, checks []check) sdk.Result {
	at := repo + "@" + sha[:7]
	if len(checks) == 0 {
		return sdk.Pending("no checks yet on " + at)
	}
	var run, odd, failing []string
	for _, c := range checks {
		switch c.state {
		case running:
			run = append(run, c.Name)
		case unknown:
			odd = append(odd, c.Name+" ("+c.Conclusion+")")
		case failed:
			failing = append(failing, c.Name)
		}
	}
	if len(run) > 0 {
		return sdk.Pending(fmt.Sprintf("%d of %d checks still running on %s: %s", len(run), len(checks), at, names(run)))
	}
	if len(odd) > 0 {
		return sdk.Pending("could not tell: conclusions this plugin does not know: " + names(odd))
	}
	d := Detail{SHA: sha, Checks: checks, Failing: failing}
	if len(failing) > 0 {
		return sdk.Settled(sdk.Outcome{
			Result:  "failure",
			Summary: fmt.Sprintf("%d of %d checks failed on %s: %s", len(failing), len(checks), at, names(failing)),
			Detail:  d,
		})
	}
	d.Failing = []string{}
	return sdk.Settled(sdk.Outcome{
		Result:  "success",
		Summary: fmt.Sprintf("all %d checks passed on %s", len(checks), at),
		Detail:  d,
	})
}

// names lists names for a one-line note, the first ten of them.
func names(n []string) string {
	if len(n) > 10 {
		return strings.Join(n[:10], ", ") + fmt.Sprintf(" and %d more", len(n)-10)
	}
	return strings.Join(n, ", ")
}

// gitHubChecks reads the commit's check runs, then its commit statuses.
func gitHubChecks(in sdk.Input, f forge.Ref, commit, sha string) ([]check, string) {
	type runs struct {
		TotalCount int `json:"total_count"`
		CheckRuns  []struct {
			Name       string  `json:"name"`
			HeadSHA    string  `json:"head_sha"`
			Status     string  `json:"status"`
			Conclusion *string `json:"conclusion"`
		} `json:"check_runs"`
	}
	var out []check
	seen := 0
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, fmt.Sprintf("could not tell: more than %d pages of check runs", maxPages)
		}
		var r runs
		u := commit + "/check-runs?per_page=100" + pageParam(page)
		if note := f.Get(in, u, "check runs", &r); note != "" {
			return nil, note
		}
		for _, cr := range r.CheckRuns {
			if cr.HeadSHA != "" && !strings.EqualFold(cr.HeadSHA, sha) {
				continue // another commit's run is another question
			}
			c := check{Name: cr.Name, Conclusion: cr.Status}
			if cr.Status == "completed" && cr.Conclusion != nil {
				c.Conclusion = *cr.Conclusion
				c.state = checkRunState(c.Conclusion)
			}
			out = append(out, c)
		}
		seen += len(r.CheckRuns)
		if len(r.CheckRuns) == 0 || seen >= r.TotalCount {
			break
		}
	}
	st, note := statuses(in, f, commit, sha, "per_page=100", gitHubState)
	if note != "" {
		return nil, note
	}
	return append(out, st...), ""
}

// statuses reads the commit's combined status: the latest status of each
// context.
func statuses(in sdk.Input, f forge.Ref, commit, sha, size string, classify func(string) state) ([]check, string) {
	type combined struct {
		SHA        string `json:"sha"`
		TotalCount int    `json:"total_count"`
		Statuses   []struct {
			Context string `json:"context"`
			State   string `json:"state"`  // GitHub
			Status  string `json:"status"` // Gitea
		} `json:"statuses"`
	}
	var out []check
	seen := 0
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, fmt.Sprintf("could not tell: more than %d pages of commit statuses", maxPages)
		}
		var c combined
		if note := f.Get(in, commit+"/status?"+size+pageParam(page), "commit status", &c); note != "" {
			return nil, note
		}
		if c.SHA != "" && !strings.EqualFold(c.SHA, sha) {
			return nil, "could not tell: the forge answered for commit " + note.Clip(c.SHA)
		}
		for _, s := range c.Statuses {
			st := s.State
			if f.Forge == forge.Gitea {
				st = s.Status
			}
			out = append(out, check{Name: s.Context, Conclusion: st, state: classify(st)})
		}
		seen += len(c.Statuses)
		if len(c.Statuses) == 0 || seen >= c.TotalCount {
			return out, ""
		}
	}
}

func pageParam(page int) string {
	if page == 1 {
		return ""
	}
	return "&page=" + strconv.Itoa(page)
}

// checkRunState classifies a completed GitHub check run's conclusion.
func checkRunState(conclusion string) state {
	switch conclusion {
	case "success", "neutral", "skipped":
		return passed
	case "failure", "cancelled", "timed_out", "action_required", "stale", "startup_failure":
		return failed
	}
	return unknown
}

// gitHubState classifies a GitHub commit status.
func gitHubState(s string) state {
	switch s {
	case "pending":
		return running
	case "success":
		return passed
	case "failure", "error":
		return failed
	}
	return unknown
}

// giteaState classifies a Gitea commit status; a warning passes.
func giteaState(s string) state {
	switch s {
	case "pending":
		return running
	case "success", "warning", "skipped":
		return passed
	case "failure", "error":
		return failed
	}
	return unknown
}
