package forge

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

// The forges the bundled plugins speak to.
const (
	GitHub = "github"
	Gitea  = "gitea"
)

// GitHubAPI is api_base when a github watch names none.
const GitHubAPI = "https://api.github.com"

var repoRe = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)

// Ref is the part of the params that says where the subject lives.
//
// A plugin's params embed it, so its fields are the params' own.
type Ref struct {
	// Forge is github or gitea.
	Forge string `json:"forge"`
	// APIBase is the forge's API root: https://api.github.com (the
	// default for github), https://gitea.example.com/api/v1.
	APIBase string `json:"api_base,omitempty"`
	// Repo is owner/name.
	Repo string `json:"repo"`
	// TokenRef names the host-held secret to authenticate with.
	TokenRef string `json:"token_ref,omitempty"`
}

// SchemaProperties are the JSON Schema properties of Ref's fields, for a
// plugin's params schema to list beside its own.
const SchemaProperties = `"forge": {"enum": ["github", "gitea"], "description": "which forge's API api_base speaks"},
    "api_base": {"type": "string", "format": "uri", "pattern": "^https?://", "maxLength": 512,
                 "description": "the API root: https://api.github.com (default for github), https://gitea.example.com/api/v1"},
    "repo": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", "maxLength": 256,
             "description": "owner/name"},
    "token_ref": {"type": "string", "pattern": "^[a-z0-9._-]{1,64}$",
                  "description": "the name of a host-held secret granted to this kind, sent as a bearer token"}`

// Base is the API base without a trailing slash.
func (f Ref) Base() string {
	if f.APIBase == "" && f.Forge == GitHub {
		return GitHubAPI
	}
	return strings.TrimRight(f.APIBase, "/")
}

// Admit checks the forge's configuration: the names, the API base's host
// against the grants, and the token's secret against the grants.
func (f Ref) Admit(kind string, g sdk.Grants) error {
	if f.Forge != GitHub && f.Forge != Gitea {
		return sdk.InvalidParams("forge", "%q: want github or gitea", f.Forge)
	}
	if f.APIBase == "" && f.Forge == Gitea {
		return sdk.InvalidParams("api_base", "required for gitea: the API root, as https://gitea.example.com/api/v1")
	}
	u, err := url.Parse(f.Base())
	if err != nil || !u.IsAbs() || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return sdk.InvalidParams("api_base", "want an absolute http or https URL")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return sdk.InvalidParams("api_base", "want the API root alone: no credentials, query or fragment")
	}
	if _, err := abi.ParseDestination(f.Base()); err != nil {
		var de *abi.DestinationError
		if errors.As(err, &de) {
			return sdk.InvalidParams("api_base", "not an API root the host can fetch from: %s", de.Reason)
		}
		return sdk.InvalidParams("api_base", "not an API root the host can fetch from")
	}
	if !repoRe.MatchString(f.Repo) || slices.Contains(strings.Split(f.Repo, "/"), "..") || slices.Contains(strings.Split(f.Repo, "/"), ".") {
		return sdk.InvalidParams("repo", "%q: want owner/name", f.Repo)
	}
	if f.TokenRef != "" {
		if err := abi.CheckSecretName(f.TokenRef); err != nil {
			return sdk.InvalidParams("token_ref", "%v", err)
		}
		if !slices.Contains(g.Secrets, f.TokenRef) {
			return sdk.Unobservable("kinds."+kind+".secrets", "secret %s is not granted to kind %s", f.TokenRef, kind)
		}
	}
	if !abi.HostGranted(g.FetchHosts, u.Hostname()) {
		return sdk.Unobservable("kinds."+kind+".fetch_hosts", "host %s is not granted to kind %s: add it to kinds.%s.fetch_hosts", u.Hostname(), kind, kind)
	}
	return nil
}

// Destinations names the forge's API root, the one place a watch of Ref
// fetches from, so the host refuses at registration an API base its
// destination guard would refuse at every probe (a loopback or private
// address) or a host outside the kind's grants. The default GitHub API
// comes from no param.
func (f Ref) Destinations() []sdk.Destination {
	d := sdk.Destination{Target: f.Base()}
	if f.APIBase != "" {
		d.Field = "api_base"
	}
	return []sdk.Destination{d}
}

// PartitionKey is the key of the repository's resource at path ("/issues/7",
// "/commits/<sha>"): its API URL, with the API root's scheme and host and
// the repository's name in lower case (forges match both without regard
// to case) and no trailing slash on the root, so every watch on one
// ticket or commit, however its params spell it, lands on one node of a
// cluster, which reads it once per interval for all of them.
func (f Ref) PartitionKey(path string) string {
	base := f.Base()
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
		base = strings.TrimRight(u.String(), "/")
	}
	return base + "/repos/" + strings.ToLower(f.Repo) + path
}

// FetchTimeout bounds one GET. The ci kind makes two or more per
// observation, all under the host's 5 s observe timeout; the ticket kind
// keeps the same bound for one.
const FetchTimeout = 2 // seconds

// Get fetches one API document into v. A non-empty note is the pending
// answer: the fetch failed, the forge did not answer 200 (a 404 is a
// repository the token cannot see as much as one that is not there), or
// the answer did not decode. what names the document in the note.
func (f Ref) Get(in sdk.Input, u, what string, v any) (note string) {
	headers := map[string]string{"accept": "application/json"}
	if f.Forge == GitHub {
		headers = map[string]string{"accept": "application/vnd.github+json", "x-github-api-version": "2022-11-28"}
	}
	resp, err := in.Fetch(sdk.FetchRequest{Method: "GET", URL: u, Headers: headers, TimeoutSeconds: FetchTimeout, Secret: f.TokenRef})
	if err != nil {
		var fe *sdk.FetchError
		if errors.As(err, &fe) {
			return fmt.Sprintf("could not tell: fetching the %s: %s", what, fe.Reason)
		}
		return fmt.Sprintf("could not tell: fetching the %s: %v", what, err)
	}
	switch {
	case resp.Status == 404:
		return fmt.Sprintf("could not tell: the forge answered 404 for the %s (not there, or the token cannot see it)", what)
	case resp.Status != 200:
		return fmt.Sprintf("could not tell: the forge answered %d for the %s", resp.Status, what)
	}
	if err := json.Unmarshal(resp.Body, v); err != nil {
		return fmt.Sprintf("could not tell: the %s did not decode", what)
	}
	return ""
}
