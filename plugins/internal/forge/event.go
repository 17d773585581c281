package forge

import (
	"net/url"
	"slices"
	"strings"

	"github.com/vigilhq/vigil/sdk/abi"
)

// Repository is the repository a forge's webhook event is about, as
// GitHub and Gitea both name it in the body of every repository event:
// its owner/name, its API URL and its web URL.
type Repository struct {
	FullName string `json:"full_name"`
	// URL is the repository's API URL: https://api.github.com/repos/o/n,
	// https://ghe.example.com/api/v3/repos/o/n,
	// https://gitea.example.com/api/v1/repos/o/n.
	URL string `json:"url"`
	// HTMLURL is its web page: https://github.com/o/n,
	// https://gitea.example.com/o/n.
	HTMLURL string `json:"html_url"`
}

// Refs are the Refs a watch on the event's repository may name: one for
// each forge API root the repository's URLs give, in order and without
// repeats (from its API URL, and from its web URL as the forge lays its
// API out: api.github.com for github.com, /api/v3 under a GitHub
// Enterprise host, /api/v1 under a Gitea's), so a watch whose api_base
// is either form is found. None for an event from another source, or a
// repository whose name is not owner/name.
func (r Repository) Refs(source string) []Ref {
	forge := ""
	switch source {
	case abi.SourceGitHub:
		forge = GitHub
	case abi.SourceGitea:
		forge = Gitea
	default:
		return nil
	}
	parts := strings.Split(r.FullName, "/")
	if !repoRe.MatchString(r.FullName) || slices.Contains(parts, "..") || slices.Contains(parts, ".") {
		return nil
	}
	var bases []string
	if b, ok := cutRepo(r.URL, "/repos/"+r.FullName); ok {
		bases = append(bases, b)
	}
	if site, ok := cutRepo(r.HTMLURL, "/"+r.FullName); ok {
		switch {
		case forge == Gitea:
			bases = append(bases, site+"/api/v1")
		case strings.EqualFold(site, "https://github.com"):
			bases = append(bases, GitHubAPI)
		default:
			bases = append(bases, site+"/api/v3")
		}
	}
	var refs []Ref
	seen := map[string]bool{}
	for _, b := range bases {
		ref := Ref{Forge: forge, APIBase: b, Repo: r.FullName}
		if k := ref.PartitionKey(""); !seen[k] {
			seen[k] = true
			refs = append(refs, ref)
		}
	}
	return refs
}

// cutRepo is u without the repository's path at its end (compared
// without regard to case, as forges match names), when u is an absolute
// http or https URL with a host and nothing after the path.
func cutRepo(u, repoPath string) (string, bool) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil || p.RawQuery != "" || p.Fragment != "" {
		return "", false
	}
	s := strings.TrimRight(u, "/")
	if len(s) < len(repoPath) || !strings.EqualFold(s[len(s)-len(repoPath):], repoPath) {
		return "", false
	}
	return s[:len(s)-len(repoPath)], true
}
