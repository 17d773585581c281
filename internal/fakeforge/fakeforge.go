package fakeforge

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// GiteaPrefix is the path under which the forge answers as Gitea.
const GiteaPrefix = "/api/v1"

// CheckRun is one GitHub check run on a commit.
type CheckRun struct {
	Name string
	// Status is queued, in_progress or completed.
	Status string
	// Conclusion is set once Status is completed: success, failure,
	// neutral, cancelled, skipped, timed_out, action_required, stale.
	Conclusion string
	// HeadSHA, when set, is reported in place of the commit asked about
	// (a forge that answers for the wrong commit).
	HeadSHA string
}

// Status is one commit status in a combined status. State is GitHub's
// vocabulary (pending, success, failure, error) and Gitea's (also
// warning, skipped); Gitea reports it under "status".
type Status struct {
	Context string
	State   string
}

// Issue is an issue (or pull request) as the issues endpoint reports it.
type Issue struct {
	Title    string
	State    string // open or closed
	Body     string // "" is reported as null, as GitHub does
	Draft    bool   // reported only when true
	Comments int    // the count the issue reports
	// Assignees are reported as assignees (and the first as assignee).
	Assignees []string
	// UpdatedAt is reported as updated_at when set.
	UpdatedAt time.Time
	// Thread is what the issue's comments endpoint lists, oldest first;
	// Comments is reported as given, so a test can make the two disagree.
	Thread []Comment
}

// Comment is one comment of an issue's thread.
type Comment struct {
	Author string
	Body   string
}

type commitKey struct{ repo, sha string }

type issueKey struct {
	repo   string
	number int
}

type fault struct {
	status     int
	retryAfter time.Duration
	hang       time.Duration
}

// Forge is a running fake forge. Its methods are safe to call while the
// server answers requests.
type Forge struct {
	srv    *httptest.Server
	closed chan struct{}

	mu       sync.Mutex
	commits  map[commitKey]bool
	runs     map[commitKey][]CheckRun
	statuses map[commitKey][]Status
	issues   map[issueKey]Issue
	pages    map[string]page
	viewer   string // the login /user answers for a request with a token; "" answers 401
	faults   map[string]fault
	counts   map[string]int
	headers  map[string][]http.Header
}

type page struct {
	status int
	body   string
}

// New starts a fake forge on a 127.0.0.1 port and stops it when the test
// ends; a request still hanging then is released first.
func New(t testing.TB) *Forge {
	t.Helper()
	f := &Forge{
		closed:   make(chan struct{}),
		commits:  map[commitKey]bool{},
		runs:     map[commitKey][]CheckRun{},
		statuses: map[commitKey][]Status{},
		issues:   map[issueKey]Issue{},
		pages:    map[string]page{},
		faults:   map[string]fault{},
		counts:   map[string]int{},
		headers:  map[string][]http.Header{},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		close(f.closed)
		f.srv.Close()
	})
	return f
}

// URL is the GitHub API base: http://127.0.0.1:port.
func (f *Forge) URL() string { return f.srv.URL }

// GiteaURL is the Gitea API base: URL() + "/api/v1".
func (f *Forge) GiteaURL() string { return f.srv.URL + GiteaPrefix }

// SetCheckRuns makes repo's commit sha known and gives it these check runs
// (none: a commit no check has reported on yet).
func (f *Forge) SetCheckRuns(repo, sha string, runs ...CheckRun) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := commitKey{repo, sha}
	f.commits[k] = true
	f.runs[k] = slices.Clone(runs)
}

// SetStatuses makes repo's commit sha known and gives it these commit
// statuses, served by both dialects' combined status.
func (f *Forge) SetStatuses(repo, sha string, statuses ...Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := commitKey{repo, sha}
	f.commits[k] = true
	f.statuses[k] = slices.Clone(statuses)
}

// SetIssue makes repo's issue number answer is.
func (f *Forge) SetIssue(repo string, number int, is Issue) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.issues[issueKey{repo, number}] = is
}

// SetViewer makes GET /user (both dialects) answer login for a request
// that carries a token; "" (the default) answers 401, a forge that cannot
// say who the token is.
func (f *Forge) SetViewer(login string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.viewer = login
}

// SetPage makes path (outside the forge's API) answer status with body,
// as application/json when the body is JSON and text/plain otherwise.
func (f *Forge) SetPage(path string, status int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pages[path] = page{status, body}
}

// Fail makes path answer status until Heal, with a Retry-After header when
// retryAfter is positive (a 429 or a 503 that names its wait).
func (f *Forge) Fail(path string, status int, retryAfter time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[path] = fault{status: status, retryAfter: retryAfter}
}

// Hang makes path wait d before it answers, or until the client gives up
// or the forge stops, whichever comes first; a test that wants a timeout
// gives a d far past its fetcher's timeout and never waits d.
func (f *Forge) Hang(path string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[path] = fault{hang: d}
}

// Heal undoes Fail or Hang on path.
func (f *Forge) Heal(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.faults, path)
}

// Requests counts the requests that arrived for path (the query is not
// part of it).
func (f *Forge) Requests(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[path]
}

// Headers returns the headers of each request that arrived for path, in
// order of arrival.
func (f *Forge) Headers(path string) []http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]http.Header, len(f.headers[path]))
	for i, h := range f.headers[path] {
		out[i] = h.Clone()
	}
	return out
}

// Paths lists every path that was asked for, sorted.
func (f *Forge) Paths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for p := range f.counts {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func (f *Forge) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	f.mu.Lock()
	f.counts[path]++
	f.headers[path] = append(f.headers[path], r.Header.Clone())
	ft, faulty := f.faults[path]
	f.mu.Unlock()

	if faulty && ft.hang > 0 {
		t := time.NewTimer(ft.hang)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-f.closed:
			return
		}
	} else if faulty {
		if ft.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((ft.retryAfter+time.Second-1)/time.Second)))
		}
		writeJSON(w, ft.status, map[string]string{"message": http.StatusText(ft.status)})
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"message": "method not allowed"})
		return
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.pages[path]; ok {
		if json.Valid([]byte(p.body)) {
			w.Header().Set("Content-Type", "application/json")
		} else {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		w.WriteHeader(p.status)
		_, _ = w.Write([]byte(p.body))
		return
	}
	gitea := strings.HasPrefix(path, GiteaPrefix+"/")
	if gitea {
		path = strings.TrimPrefix(path, GiteaPrefix)
	}
	if path == "/user" {
		if f.viewer == "" || r.Header.Get("Authorization") == "" {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Requires authentication"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": 1, "login": f.viewer})
		return
	}
	seg := strings.Split(strings.TrimPrefix(path, "/"), "/")
	// repos/{owner}/{name}/commits/{sha}/check-runs|status
	// repos/{owner}/{name}/issues/{number}[/comments]
	if len(seg) < 5 || seg[0] != "repos" {
		notFound(w)
		return
	}
	repo := seg[1] + "/" + seg[2]
	switch {
	case len(seg) == 6 && seg[3] == "commits" && seg[5] == "check-runs" && !gitea:
		f.serveCheckRuns(w, r, commitKey{repo, seg[4]})
	case len(seg) == 6 && seg[3] == "commits" && seg[5] == "status":
		f.serveStatus(w, r, commitKey{repo, seg[4]}, gitea)
	case len(seg) == 5 && seg[3] == "issues":
		n, err := strconv.Atoi(seg[4])
		is, ok := f.issues[issueKey{repo, n}]
		if err != nil || !ok {
			notFound(w)
			return
		}
		f.serveIssue(w, n, is)
	case len(seg) == 6 && seg[3] == "issues" && seg[5] == "comments":
		n, err := strconv.Atoi(seg[4])
		is, ok := f.issues[issueKey{repo, n}]
		if err != nil || !ok {
			notFound(w)
			return
		}
		f.serveComments(w, r, is, gitea)
	default:
		notFound(w)
	}
}

func (f *Forge) serveCheckRuns(w http.ResponseWriter, r *http.Request, k commitKey) {
	if !f.commits[k] {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "No commit found for SHA: " + k.sha})
		return
	}
	type run struct {
		ID         int     `json:"id"`
		Name       string  `json:"name"`
		HeadSHA    string  `json:"head_sha"`
		Status     string  `json:"status"`
		Conclusion *string `json:"conclusion"`
	}
	var all []run
	for i, c := range f.runs[k] {
		sha := k.sha
		if c.HeadSHA != "" {
			sha = c.HeadSHA
		}
		rr := run{ID: i + 1, Name: c.Name, HeadSHA: sha, Status: c.Status}
		if c.Conclusion != "" {
			rr.Conclusion = &c.Conclusion
		}
		all = append(all, rr)
	}
	pg := paginate(r, len(all), "per_page")
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(all), "check_runs": orEmpty(all[pg.lo:pg.hi])})
}

func (f *Forge) serveStatus(w http.ResponseWriter, r *http.Request, k commitKey, gitea bool) {
	if !f.commits[k] {
		notFound(w)
		return
	}
	sts := f.statuses[k]
	var combined string
	switch {
	case len(sts) == 0:
		combined = "pending"
	case slices.ContainsFunc(sts, func(s Status) bool { return s.State == "failure" || s.State == "error" }):
		combined = "failure"
	case slices.ContainsFunc(sts, func(s Status) bool { return s.State == "pending" }):
		combined = "pending"
	default:
		combined = "success"
	}
	var list []map[string]any
	for i, s := range sts {
		key := "state"
		if gitea {
			key = "status"
		}
		list = append(list, map[string]any{"id": i + 1, "context": s.Context, key: s.State})
	}
	param := "per_page"
	if gitea {
		param = "limit"
	}
	pg := paginate(r, len(list), param)
	writeJSON(w, http.StatusOK, map[string]any{
		"state": combined, "sha": k.sha, "total_count": len(list), "statuses": orEmpty(list[pg.lo:pg.hi]),
	})
}

func (f *Forge) serveIssue(w http.ResponseWriter, n int, is Issue) {
	out := map[string]any{"number": n, "title": is.Title, "state": is.State, "comments": is.Comments, "body": nil,
		"assignee": nil, "assignees": []any{}}
	if is.Body != "" {
		out["body"] = is.Body
	}
	if is.Draft {
		out["draft"] = true
	}
	if len(is.Assignees) > 0 {
		var as []map[string]string
		for _, a := range is.Assignees {
			as = append(as, map[string]string{"login": a})
		}
		out["assignees"], out["assignee"] = as, as[0]
	}
	if !is.UpdatedAt.IsZero() {
		out["updated_at"] = is.UpdatedAt.UTC().Format(time.RFC3339)
	}
	writeJSON(w, http.StatusOK, out)
}

// serveComments lists an issue's thread, oldest first: a page of it on
// GitHub (per_page, page), all of it on Gitea, whose issue comments
// endpoint does not page.
func (f *Forge) serveComments(w http.ResponseWriter, r *http.Request, is Issue, gitea bool) {
	all := make([]map[string]any, len(is.Thread))
	for i, c := range is.Thread {
		all[i] = map[string]any{"id": i + 1, "body": c.Body, "user": map[string]string{"login": c.Author}}
	}
	if !gitea {
		pg := paginate(r, len(all), "per_page")
		all = all[pg.lo:pg.hi]
	}
	writeJSON(w, http.StatusOK, orEmpty(all))
}

type span struct{ lo, hi int }

// paginate reads page (from 1) and the page size (default 30, at most 100)
// as both forges do.
func paginate(r *http.Request, n int, sizeParam string) span {
	size, err := strconv.Atoi(r.URL.Query().Get(sizeParam))
	if err != nil || size <= 0 {
		size = 30
	}
	size = min(size, 100)
	pg, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || pg < 1 {
		pg = 1
	}
	lo := min((pg-1)*size, n)
	return span{lo, min(lo+size, n)}
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
