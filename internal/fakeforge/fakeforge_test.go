package fakeforge

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

func get(t *testing.T, f Fetcher, url string) sdk.FetchResponse {
	t.Helper()
	resp, err := f.Fetch(sdk.FetchRequest{Method: "GET", URL: url, Secret: "gh"})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestForge(t *testing.T) {
	ff := New(t)
	ff.SetCheckRuns("o/r", sha, CheckRun{Name: "a", Status: "completed", Conclusion: "success"},
		CheckRun{Name: "b", Status: "in_progress"}, CheckRun{Name: "c", Status: "completed", Conclusion: "failure"})
	ff.SetStatuses("o/r", sha, Status{Context: "ci/x", State: "warning"})
	ff.SetIssue("o/r", 7, Issue{Title: "t", State: "open", Comments: 2})
	ff.SetPage("/page", 200, "hello")
	ff.Fail("/busy", 429, 3*time.Second)
	ff.Hang("/slow", time.Hour)
	f := Fetcher{MaxTimeout: 50 * time.Millisecond}

	tests := []struct {
		name, url string
		status    int
		body      string // a substring of the body
		header    [2]string
		reason    string
	}{
		{name: "first page of check runs", url: ff.URL() + "/repos/o/r/commits/" + sha + "/check-runs?per_page=2", status: 200, body: `"name":"b"`},
		{name: "second page of check runs", url: ff.URL() + "/repos/o/r/commits/" + sha + "/check-runs?per_page=2&page=2", status: 200, body: `"check_runs":[{"id":3,`},
		{name: "unknown commit", url: ff.URL() + "/repos/o/r/commits/" + strings.Repeat("f", 40) + "/check-runs", status: 422},
		{name: "github status", url: ff.URL() + "/repos/o/r/commits/" + sha + "/status", status: 200, body: `"state":"warning"`},
		{name: "gitea status", url: ff.GiteaURL() + "/repos/o/r/commits/" + sha + "/status", status: 200, body: `"status":"warning"`},
		{name: "gitea has no check runs", url: ff.GiteaURL() + "/repos/o/r/commits/" + sha + "/check-runs", status: 404},
		{name: "issue", url: ff.URL() + "/repos/o/r/issues/7", status: 200, body: `"body":null`},
		{name: "no such issue", url: ff.URL() + "/repos/o/r/issues/8", status: 404},
		{name: "page", url: ff.URL() + "/page", status: 200, body: "hello"},
		{name: "rate limited", url: ff.URL() + "/busy", status: 429, header: [2]string{"retry-after", "3"}},
		{name: "hang", url: ff.URL() + "/slow", reason: abi.FetchTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := get(t, f, tt.url)
			if tt.reason != "" {
				if resp.Failure == nil || resp.Failure.Reason != tt.reason {
					t.Fatalf("%+v, want failure %s", resp, tt.reason)
				}
				return
			}
			if resp.Status != tt.status || !strings.Contains(string(resp.Body), tt.body) {
				t.Fatalf("%d %s", resp.Status, resp.Body)
			}
			if tt.header[0] != "" && resp.Headers[tt.header[0]] != tt.header[1] {
				t.Fatalf("headers %v", resp.Headers)
			}
		})
	}
	path := "/repos/o/r/issues/7"
	if n := ff.Requests(path); n != 1 {
		t.Fatalf("%d requests for %s", n, path)
	}
	if got := ff.Headers(path)[0].Get("Authorization"); got != "Bearer "+TestToken {
		t.Fatalf("authorization %q", got)
	}
	var is map[string]any
	if err := json.Unmarshal(get(t, f, ff.URL()+path).Body, &is); err != nil || is["title"] != "t" {
		t.Fatalf("%v %v", is, err)
	}
}

func TestFetcherRefuses(t *testing.T) {
	ff := New(t)
	for name, req := range map[string]sdk.FetchRequest{
		"post":           {Method: "POST", URL: ff.URL()},
		"upper-case":     {Method: "GET", URL: ff.URL(), Headers: map[string]string{"Accept": "x"}},
		"not a token":    {Method: "GET", URL: ff.URL(), Headers: map[string]string{"a b": "x"}},
		"control value":  {Method: "GET", URL: ff.URL(), Headers: map[string]string{"a": "x\ny"}},
		"unknown secret": {Method: "GET", URL: ff.URL(), Secret: "nope"},
	} {
		resp, err := Fetcher{}.Fetch(req)
		if err != nil || resp.Failure == nil {
			t.Errorf("%s: %+v %v", name, resp, err)
		}
	}
	if len(ff.Paths()) != 0 {
		t.Fatalf("a refused fetch reached the forge: %v", ff.Paths())
	}
}

// An issue's thread pages on GitHub and comes whole on Gitea; /user says
// who a token is, and nothing without one or before SetViewer.
func TestCommentsAndViewer(t *testing.T) {
	ff := New(t)
	ff.SetIssue("o/r", 7, Issue{Title: "t", State: "open", Comments: 3, Assignees: []string{"bot"},
		UpdatedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		Thread:    []Comment{{"ann", "one"}, {"bob", "two"}, {"cy", "three"}}})
	f := Fetcher{MaxTimeout: time.Second}
	for _, tt := range []struct{ url, want string }{
		{ff.URL() + "/repos/o/r/issues/7", `"assignees":[{"login":"bot"}]`},
		{ff.URL() + "/repos/o/r/issues/7", `"updated_at":"2026-11-30T12:00:00Z"`},
		{ff.URL() + "/repos/o/r/issues/7/comments?per_page=2&page=2", `[{"body":"three","id":3,"user":{"login":"cy"}}]`},
		{ff.GiteaURL() + "/repos/o/r/issues/7/comments?page=2&limit=2", `"body":"one"`},
	} {
		if resp := get(t, f, tt.url); resp.Status != 200 || !strings.Contains(string(resp.Body), tt.want) {
			t.Errorf("%s: %d %s, want %s", tt.url, resp.Status, resp.Body, tt.want)
		}
	}
	if resp := get(t, f, ff.URL()+"/user"); resp.Status != 401 {
		t.Fatalf("/user before SetViewer: %d", resp.Status)
	}
	ff.SetViewer("vigil-bot")
	if resp := get(t, f, ff.GiteaURL()+"/user"); resp.Status != 200 || !strings.Contains(string(resp.Body), `"login":"vigil-bot"`) {
		t.Fatalf("/user: %d %s", resp.Status, resp.Body)
	}
	if resp, _ := f.Fetch(sdk.FetchRequest{Method: "GET", URL: ff.URL() + "/user"}); resp.Status != 401 {
		t.Fatalf("/user without a token: %d", resp.Status)
	}
}
