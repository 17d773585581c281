package observe

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/sdk/abi"
)

// Config is the observe part of the host's configuration: per scope, the
// sources executors may report and which sources' threads become Work.
//
//	scopes:
//	  support:
//	    observe:
//	      - sources:
//	          - name: slack-help
//	            reporters: [slack-watcher, help-script]
//	    routes:
//	      - source: slack-help
type Config struct {
	Scopes map[string]Scope `yaml:"scopes" json:"scopes"`
}

// Scope is one namespace of observed sources.
type Scope struct {
	Observe []Entry `yaml:"observe" json:"observe"`
	Routes  []Route `yaml:"routes" json:"routes"`
}

// Entry declares sources. Several entries may declare one source; their
// reporters combine. An entry takes no secrets.
type Entry struct {
	Sources []Source `yaml:"sources" json:"sources"`
}

// Source is an outside source and the principals that may report it.
type Source struct {
	Name      string   `yaml:"name" json:"name"`
	Reporters []string `yaml:"reporters" json:"reporters"`
}

// Route takes the threads of one source into Work.
type Route struct {
	Source string `yaml:"source" json:"source"`
}

// MaxSourceName bounds a source name.
const MaxSourceName = 64

// validName is the grammar of scope and source names: lower case letters,
// digits, '.', '_' and '-', 1 to 64 bytes (the kind grammar).
func validName(s string) bool { return abi.ValidKind(s) }

// ValidPrincipal is the grammar of a reporter: what an API principal may
// be called (the recipient id grammar: 1-128 of letters, digits, . _ : -).
type ValidPrincipal func(string) bool

// ConfigError names the entry at fault.
type ConfigError struct {
	Path string // "scopes.support.observe[0].sources[1].name"
	Err  error
}

func (e *ConfigError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Validate checks every scope, entry, source and route, and returns every
// problem, each naming its entry. A route whose source no entry declares
// is allowed (it routes nothing until one does): removing a source while
// keeping its route is how a source is paused.
func (c Config) Validate(principal ValidPrincipal) error {
	var errs []error
	bad := func(path string, err error) { errs = append(errs, &ConfigError{Path: path, Err: err}) }
	for _, scope := range slices.Sorted(maps.Keys(c.Scopes)) {
		sc := c.Scopes[scope]
		base := "scopes." + scope
		if !validName(scope) {
			bad(base, fmt.Errorf("scope name %q: want 1-64 of a-z 0-9 . _ -", scope))
		}
		for i, e := range sc.Observe {
			if len(e.Sources) == 0 {
				bad(fmt.Sprintf("%s.observe[%d].sources", base, i), errors.New("an observe entry declares at least one source"))
			}
			for j, s := range e.Sources {
				p := fmt.Sprintf("%s.observe[%d].sources[%d]", base, i, j)
				if !validName(s.Name) {
					bad(p+".name", fmt.Errorf("%q: want 1-%d of a-z 0-9 . _ -", s.Name, MaxSourceName))
				}
				if len(s.Reporters) == 0 {
					bad(p+".reporters", fmt.Errorf("source %s lists no reporter; it needs at least one principal", s.Name))
				}
				for k, r := range s.Reporters {
					if principal != nil && !principal(r) {
						bad(fmt.Sprintf("%s.reporters[%d]", p, k), fmt.Errorf("%q is not a principal name", r))
					}
				}
			}
		}
		seen := map[string]bool{}
		for i, r := range sc.Routes {
			p := fmt.Sprintf("%s.routes[%d].source", base, i)
			switch {
			case !validName(r.Source):
				bad(p, fmt.Errorf("%q: want 1-%d of a-z 0-9 . _ -", r.Source, MaxSourceName))
			case seen[r.Source]:
				bad(p, fmt.Errorf("source %s is routed twice; one route per source", r.Source))
			}
			seen[r.Source] = true
		}
	}
	return errors.Join(errs...)
}

// view is a Config compiled for the lookups a record and a routing step
// make. It is immutable.
type view struct {
	// reporting[scope][principal] is the sources of scope the principal
	// reports, sorted; every configured scope has an entry.
	reporting map[string]map[string][]string
	// declared[scope][source] is whether an entry declares the source.
	declared map[string]map[string]bool
	// routed[scope][source] is whether a route takes the source.
	routed map[string]map[string]bool
}

func compile(c Config) *view {
	v := &view{reporting: map[string]map[string][]string{}, declared: map[string]map[string]bool{}, routed: map[string]map[string]bool{}}
	for scope, sc := range c.Scopes {
		reporting, declared, routed := map[string][]string{}, map[string]bool{}, map[string]bool{}
		for _, e := range sc.Observe {
			for _, s := range e.Sources {
				declared[s.Name] = true
				for _, r := range s.Reporters {
					if !slices.Contains(reporting[r], s.Name) {
						reporting[r] = append(reporting[r], s.Name)
					}
				}
			}
		}
		for _, names := range reporting {
			slices.Sort(names)
		}
		for _, r := range sc.Routes {
			routed[r.Source] = true
		}
		v.reporting[scope], v.declared[scope], v.routed[scope] = reporting, declared, routed
	}
	return v
}

// scope reports whether the configuration names scope.
func (v *view) scope(scope string) bool {
	_, ok := v.reporting[scope]
	return ok
}

// recordable says whether scope has the record operation: the
// configuration names it (else ErrUnknownScope) and one of its observe
// entries is left (else observe_unavailable). Every entry declares at
// least one source, so a scope declaring none has no entry.
func (v *view) recordable(scope string) error {
	if !v.scope(scope) {
		return fmt.Errorf("%w %q", ErrUnknownScope, scope)
	}
	if len(v.declared[scope]) == 0 {
		return &api.Error{Code: api.CodeObserveUnavailable, Message: fmt.Sprintf("scope %s has no observe entry, so nothing can be recorded there", scope)}
	}
	return nil
}

// reported is the sources of scope that principal is a reporter of,
// sorted.
func (v *view) reported(scope, principal string) []string { return v.reporting[scope][principal] }

// routes reports whether an item of scope/source is routed now: a route
// takes the source and an entry still declares it.
func (v *view) routes(scope, source string) bool {
	return v.declared[scope][source] && v.routed[scope][source]
}

// threadKey is the key a thread's items are addressed to and its Work
// owns: observe/<scope>/<source>/<thread>. Scope and source names hold no
// '/', so the thread id, which may, cannot make two keys collide.
func threadKey(scope, source, thread string) string {
	return "observe/" + scope + "/" + source + "/" + thread
}

// splitThreadKey is threadKey's inverse.
func splitThreadKey(key string) (scope, source, thread string, ok bool) {
	rest, ok := strings.CutPrefix(key, "observe/")
	if !ok {
		return "", "", "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}
