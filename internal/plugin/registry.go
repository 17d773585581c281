package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// RegistryFile is the name of the registry in a plugin directory.
const RegistryFile = "registry.json"

// Registry is the operator's say over plugins: one entry per kind. The
// bundled set carries its own registry; an entry in the plugin directory's
// registry replaces the bundled entry of the same kind whole.
//
//	{
//	  "kinds": {
//	    "ci": {
//	      "wasm": "ci.wasm",
//	      "capabilities": ["fetch"],
//	      "fetch_hosts": ["api.github.com"],
//	      "private_ranges": [],
//	      "timeout": "5s",
//	      "memory_mib": 64,
//	      "min_read_interval": "1m",
//	      "config": {"forge": "github"}
//	    }
//	  }
//	}
type Registry struct {
	Kinds map[string]Entry `json:"kinds"`
}

// Entry is one kind's grants. Every field is optional.
type Entry struct {
	// Wasm names the plugin file in the plugin directory. Without it, the
	// kind is served by whichever file's describe claims it; with it, that
	// file wins a kind two files claim.
	Wasm string `json:"wasm,omitempty"`
	// Capabilities granted ("fetch"). A plugin that needs one not listed is
	// loaded, but every watch of its kind is refused as unobservable.
	Capabilities []string `json:"capabilities,omitempty"`
	// FetchHosts the plugin may reach through vigil_fetch.
	FetchHosts []string `json:"fetch_hosts,omitempty"`
	// PrivateRanges the fetch destination guard lets this plugin reach.
	PrivateRanges []string `json:"private_ranges,omitempty"`
	// Secrets names the credentials in the host's configuration this kind
	// may have vigil_fetch attach (abi.FetchRequest.Secret).
	Secrets []string `json:"secrets,omitempty"`
	// Exec grants vigil_exec: the programs the kind may run, the host
	// environment variables passed to them, and the longest a command may
	// run. It goes with the "exec" capability.
	Exec *ExecGrant `json:"exec,omitempty"`
	// Timeout of one observe call; default Limits.ObserveTimeout.
	Timeout Duration `json:"timeout,omitzero"`
	// MemoryMiB caps each instance's memory; default Limits.MemoryMiB.
	MemoryMiB uint32 `json:"memory_mib,omitempty"`
	// MinReadInterval is the floor on how often the kind's watches read
	// one resource, however many watches read it and whatever each one's
	// every: the fetch issuer serves each of them a result held for
	// MinReadInterval, so one resource costs one origin read per
	// interval (seed 002: one read attempt per ticket per minute, however
	// many consumers). Zero: each watch's own cadence, at least the
	// issuer's MinInterval. At most MaxMinReadInterval.
	MinReadInterval Duration `json:"min_read_interval,omitzero"`
	// Config is handed to the plugin as its Extism config.
	Config map[string]string `json:"config,omitempty"`
}

// ExecGrant is the operator's grant of vigil_exec to one kind.
type ExecGrant struct {
	// Programs are absolute paths, or bare names resolved on the host's
	// PATH once, when the plugin loads. No shell runs unless one is listed.
	Programs []string `json:"programs"`
	// Env names the host environment variables a command gets; nothing
	// else is inherited.
	Env []string `json:"env,omitempty"`
	// MaxTimeout bounds one command (default 30s, at most 2m). The plugin
	// call's own timeout bounds it as well.
	MaxTimeout Duration `json:"max_timeout,omitzero"`
}

// DefaultExecTimeout is an exec grant's MaxTimeout when it names none.
const DefaultExecTimeout = 30 * time.Second

// Max is g's MaxTimeout, or the default.
func (g *ExecGrant) Max() time.Duration {
	if g == nil || g.MaxTimeout == 0 {
		return DefaultExecTimeout
	}
	return time.Duration(g.MaxTimeout)
}

// Duration is a time.Duration written as "5s" in JSON.
type Duration time.Duration

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`want a duration string such as "5s"`)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Registry bounds.
const (
	maxTimeout   = 2 * time.Minute
	maxMemoryMiB = 4096
	// MaxMinReadInterval bounds an entry's min_read_interval: a day, the
	// longest a kind's default cadence may be.
	MaxMinReadInterval = 24 * time.Hour
)

// ParseRegistry decodes and validates a registry. name is for messages.
// Unknown fields are refused: a misspelt grant must not silently grant
// nothing.
func ParseRegistry(name string, data []byte) (Registry, error) {
	var r Registry
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, &RegistryError{File: name, Err: err}
	}
	if dec.More() {
		return r, &RegistryError{File: name, Err: errors.New("trailing data after the JSON object")}
	}
	for kind, e := range r.Kinds {
		if err := e.validate(kind); err != nil {
			return r, &RegistryError{File: name, Key: "kinds." + kind, Err: err}
		}
	}
	return r, nil
}

func (e Entry) validate(kind string) error {
	if err := abi.CheckKind(kind); err != nil {
		return err
	}
	if e.Wasm != "" && (path.Base(e.Wasm) != e.Wasm || !strings.HasSuffix(e.Wasm, ".wasm")) {
		return fmt.Errorf("wasm %q: want a .wasm file name in the plugin directory, no path", e.Wasm)
	}
	known := abi.KnownCapabilities()
	for _, c := range e.Capabilities {
		if !slices.Contains(known, c) {
			return fmt.Errorf("capabilities: unknown capability %q (known: %s)", c, strings.Join(known, ", "))
		}
	}
	for _, h := range e.FetchHosts {
		if h == "" || strings.ContainsAny(h, "/:@ ") || strings.Contains(strings.TrimPrefix(h, "*."), "*") && h != "*" {
			return fmt.Errorf(`fetch_hosts: %q is not a host name, "*.domain" or "*"`, h)
		}
	}
	for _, n := range e.Secrets {
		if err := abi.CheckSecretName(n); err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
	}
	for _, p := range e.PrivateRanges {
		if _, err := netip.ParsePrefix(p); err != nil {
			return fmt.Errorf("private_ranges: %w", err)
		}
	}
	hasExec := slices.Contains(e.Capabilities, abi.CapabilityExec)
	switch {
	case hasExec && e.Exec == nil:
		return errors.New(`capabilities: "exec" needs an exec grant ({"exec": {"programs": [...]}}) naming what may run`)
	case !hasExec && e.Exec != nil:
		return errors.New(`exec: granted without the "exec" capability; add it to capabilities`)
	case e.Exec != nil:
		if err := e.Exec.validate(); err != nil {
			return fmt.Errorf("exec: %w", err)
		}
		if t := time.Duration(e.Timeout); t > 0 && e.Exec.Max() >= t {
			return fmt.Errorf("exec: max_timeout %s is not under the kind's timeout %s: the observe call would end before the command's own timeout", e.Exec.Max(), t)
		}
	}
	if t := time.Duration(e.Timeout); t < 0 || t > maxTimeout {
		return fmt.Errorf("timeout %s: want between 0 (the default) and %s", t, maxTimeout)
	}
	if e.MemoryMiB > maxMemoryMiB {
		return fmt.Errorf("memory_mib %d: at most %d", e.MemoryMiB, maxMemoryMiB)
	}
	if d := time.Duration(e.MinReadInterval); d < 0 || d > MaxMinReadInterval {
		return fmt.Errorf("min_read_interval %s: want between 0 (none) and %s", d, MaxMinReadInterval)
	}
	return nil
}

func (g *ExecGrant) validate() error {
	if len(g.Programs) == 0 {
		return errors.New("programs: list at least one program (an absolute path, or a name on the host's PATH)")
	}
	for _, p := range g.Programs {
		switch {
		case p == "" || strings.ContainsRune(p, 0):
			return fmt.Errorf("programs: %q is not a program", p)
		case strings.Contains(p, "/") && (!path.IsAbs(p) || path.Clean(p) != p):
			return fmt.Errorf("programs: %q: want an absolute, clean path or a bare name", p)
		}
	}
	for _, n := range g.Env {
		if !validEnvName(n) {
			return fmt.Errorf("env: %q is not an environment variable name", n)
		}
	}
	if t := time.Duration(g.MaxTimeout); t < 0 || t > maxTimeout {
		return fmt.Errorf("max_timeout %s: want between 0 (the default, %s) and %s", t, DefaultExecTimeout, maxTimeout)
	}
	return nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// grants is what admit and the plugin see of an entry.
func (e Entry) grants() abi.Grants {
	caps := e.Capabilities
	if caps == nil {
		caps = []string{}
	}
	g := abi.Grants{Capabilities: caps, FetchHosts: e.FetchHosts, Secrets: e.Secrets}
	if e.Exec != nil {
		g.Programs = e.Exec.Programs
		g.ExecMaxTimeout = e.Exec.Max().String()
	}
	return g
}

// readRegistry reads name from fsys; a missing file is an empty registry.
func readRegistry(fsys fs.FS, label string) (Registry, error) {
	data, err := fs.ReadFile(fsys, RegistryFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Registry{}, nil
	}
	if err != nil {
		return Registry{}, &RegistryError{File: label, Err: err}
	}
	return ParseRegistry(label, data)
}

// merge overlays o on r, entry by entry.
func (r Registry) merge(o Registry) Registry {
	out := Registry{Kinds: make(map[string]Entry, len(r.Kinds)+len(o.Kinds))}
	for k, e := range r.Kinds {
		out.Kinds[k] = e
	}
	for k, e := range o.Kinds {
		out.Kinds[k] = e
	}
	return out
}
