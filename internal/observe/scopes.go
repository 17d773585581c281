package observe

import (
	"maps"
	"slices"
)

// ScopeInfo is one configured scope as the API lists it: its declared
// sources, sorted, each with whether a route takes its threads into Work.
type ScopeInfo struct {
	Name    string
	Sources []SourceInfo
}

// SourceInfo is one declared source of a scope.
type SourceInfo struct {
	Name   string
	Routed bool
}

// Scopes lists the scopes in force, by name, from the compiled
// configuration (no store read).
func (ob *Observer) Scopes() []ScopeInfo {
	v := ob.cfg.Load()
	out := make([]ScopeInfo, 0, len(v.reporting))
	for _, name := range slices.Sorted(maps.Keys(v.reporting)) {
		si := ScopeInfo{Name: name, Sources: []SourceInfo{}}
		for _, src := range slices.Sorted(maps.Keys(v.declared[name])) {
			si.Sources = append(si.Sources, SourceInfo{Name: src, Routed: v.routed[name][src]})
		}
		out = append(out, si)
	}
	return out
}
