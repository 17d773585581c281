package main

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/fetch"
	"github.com/vigilhq/vigil/internal/hooks"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// settings is serve's whole configuration. Each value comes from, in
// order of precedence: a flag, the environment (VIGIL_*), the config file,
// the default.
//
//	# vigil.yaml
//	listen: 127.0.0.1:7878
//	data: ./vigil-data
//	plugin_cache: /var/cache/vigil     # default: vigil/wazero in the user cache directory
//	plugins: ./plugins
//	workers: 4
//	fsync: true
//	webhook_allow: [127.0.0.0/8]
//	recipient_max_refs: 1000
//	recipient_max_pending: 10000
//	debug_listen: 127.0.0.1:6060      # default: off; loopback only
//	tokens:
//	  - principal: agent-7            # acts for recipient agent-7 only
//	    token: "a long random string"
//	  - principal: orchestrator
//	    token: "another long random string"
//	    recipients: [team-lead]       # beside its own name, always
//	    roles: [orchestrator]         # registers watches for others...
//	    register_for: ["worker-*"]    # ...these ones
//	    scopes: [support]             # lists, claims and completes its Work
//	  - principal: ops
//	    token: "a third long random string"
//	    roles: [operator]             # reads everything; admin does everything
//	fetch:
//	  max_timeout: 120s
//	  max_fetch_time: 120s
//	  min_interval: 1s
//	  max_body_bytes: 1048576
//	  user_agent: vigil
//	hooks:                            # POST /api/v1/hooks/{name} (docs/hooks.md)
//	  github:
//	    kind: ci                      # the kind whose wake maps its events to watches
//	    scheme: github                # github, gitea or standard (Standard Webhooks)
//	    secret: env:GITHUB_HOOK_SECRET  # or file:PATH, or the value
//	    fallback: 5m                  # the cadence of the kind's watches left at the default every
//	  status:
//	    kind: http
//	    scheme: standard
//	    secret: file:/run/secrets/status-whsec
//	    tolerance: 5m                 # the timestamp's; webhook-ids are remembered as long
//	secrets:
//	  github: env:GITHUB_TOKEN
//	  gitea: file:/run/secrets/gitea-token
//	observe:
//	  rate: 100
//	  burst: 200
//	  run_per_minute: 1000
//	store:                            # a node of a JetStream cluster; none: badger in data
//	  nats:
//	    urls: [nats://10.0.0.1:4222, nats://10.0.0.2:4222]
//	    credentials: /etc/vigil/nats.creds
//	    tls: {ca: ca.pem, cert: vigil.pem, key: vigil-key.pem}
//	    replicas: 3                   # fixed when the cluster's store is created
//	    partitions: 64                # likewise
//	    bucket: vigil
//	    node: vigil-1                 # default: the host name, sanitized
//	    lease_ttl: 10s
//	    start_timeout: 60s            # how long to wait for JetStream at start
//	scopes:
//	  support:
//	    observe:
//	      - sources:
//	          - name: slack-help
//	            reporters: [ci-bot]
//	    routes:
//	      - source: slack-help
type settings struct {
	Listen string `yaml:"listen"`
	// DebugListen, when set, serves Go's profiles and POST /debug/free
	// there (debug.go); loopback only.
	DebugListen  string   `yaml:"debug_listen"`
	Data         string   `yaml:"data"`
	PluginCache  string   `yaml:"plugin_cache"`
	Plugins      string   `yaml:"plugins"`
	Workers      int      `yaml:"workers"`
	Fsync        bool     `yaml:"fsync"`
	WebhookAllow []string `yaml:"webhook_allow"`
	// MaxRefs and MaxPending bound one recipient's refs and pending
	// watches; 0 takes the default (recipients.DefaultMaxRefs,
	// DefaultMaxPending).
	MaxRefs    int                      `yaml:"recipient_max_refs"`
	MaxPending int                      `yaml:"recipient_max_pending"`
	Tokens     []token                  `yaml:"tokens"`
	Fetch      fetchSettings            `yaml:"fetch"`
	Secrets    map[string]string        `yaml:"secrets"`
	Observe    observeSettings          `yaml:"observe"`
	Scopes     map[string]observe.Scope `yaml:"scopes"`
	// Hooks are the inbound webhook sources by name (config file only;
	// each secret a reference like Secrets').
	Hooks hooks.Config `yaml:"hooks"`
	// Store chooses the backend: badger in Data (the default), or a
	// JetStream cluster (store.nats, --store nats://…, VIGIL_STORE).
	Store storeSettings `yaml:"store"`
}

// observeSettings bound recording per principal and per run of a
// principal (config file only).
type observeSettings struct {
	Rate         float64 `yaml:"rate"`
	Burst        int     `yaml:"burst"`
	RunPerMinute int     `yaml:"run_per_minute"`
}

// fetchSettings tune the fetch issuer (config file only). Zero values take
// the issuer's defaults.
type fetchSettings struct {
	MaxTimeout time.Duration `yaml:"max_timeout"`
	// MaxFetchTime bounds a whole fetch, where max_timeout bounds each of
	// its operations; never less than max_timeout.
	MaxFetchTime time.Duration `yaml:"max_fetch_time"`
	MinInterval  time.Duration `yaml:"min_interval"`
	MaxBodyBytes int64         `yaml:"max_body_bytes"`
	UserAgent    string        `yaml:"user_agent"`
}

// token maps a bearer token to the principal it authenticates, and says
// what that principal may do (internal/authz, docs/authorization.md). Tokens
// come from the config file only: a flag or an environment variable would
// put them in process listings and shell history.
type token struct {
	Principal   string       `yaml:"principal"`
	Token       string       `yaml:"token"`
	Recipients  []string     `yaml:"recipients"`
	RegisterFor []string     `yaml:"register_for"`
	Scopes      []string     `yaml:"scopes"`
	Roles       []authz.Role `yaml:"roles"`
}

func defaultSettings() settings {
	// fsync on: acknowledge only what is on stable storage (store/doc.go).
	return settings{Listen: "127.0.0.1:7878", Data: "./vigil-data", Workers: scheduler.DefaultWorkers, Fsync: true}
}

// The largest bounds an operator may set per recipient: far above any
// real need, below what would let one recipient fill the host.
const (
	maxRefsBound    = 100_000
	maxPendingBound = 10_000_000
)

// configError names the key at fault and where it came from.
type configError struct {
	Key    string // "workers"
	Source string // "--workers", "VIGIL_WORKERS", "vigil.yaml"
	Err    error
}

func (e *configError) Error() string {
	return fmt.Sprintf("invalid %s (from %s): %v", e.Key, e.Source, e.Err)
}

func (e *configError) Unwrap() error { return e.Err }

// loadSettings resolves the settings: defaults, then the config file, then
// the environment, then the flags the user set.
func loadSettings(flags *pflag.FlagSet, getenv func(string) string) (settings, error) {
	s := defaultSettings()
	path, _ := flags.GetString("config")
	pathSource := "--config"
	if !flags.Changed("config") {
		path, pathSource = getenv("VIGIL_CONFIG"), "VIGIL_CONFIG"
	}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return s, &configError{Key: "config", Source: pathSource, Err: err}
		}
		if key, err := decodeConfig(data, &s); err != nil {
			return s, &configError{Key: key, Source: path, Err: err}
		}
	}
	fileSource := path
	sources := map[string]string{}
	for _, k := range yamlKeys(reflect.TypeFor[settings]()) {
		sources[k] = fileSource
		if fileSource == "" {
			sources[k] = "the default"
		}
	}

	sources["store.nats"] = sources["store"]

	env := func(key, name string, set func(string) error) error {
		if v := getenv(name); v != "" {
			sources[key] = name
			if err := set(v); err != nil {
				return &configError{Key: key, Source: name, Err: err}
			}
		}
		return nil
	}
	if err := errors.Join(
		env("listen", "VIGIL_LISTEN", func(v string) error { s.Listen = v; return nil }),
		env("debug_listen", "VIGIL_DEBUG_LISTEN", func(v string) error { s.DebugListen = v; return nil }),
		env("data", "VIGIL_DATA", func(v string) error { s.Data = v; return nil }),
		env("plugin_cache", "VIGIL_PLUGIN_CACHE", func(v string) error { s.PluginCache = v; return nil }),
		env("plugins", "VIGIL_PLUGINS", func(v string) error { s.Plugins = v; return nil }),
		env("workers", "VIGIL_WORKERS", func(v string) (err error) { s.Workers, err = strconv.Atoi(v); return err }),
		env("fsync", "VIGIL_FSYNC", func(v string) (err error) { s.Fsync, err = strconv.ParseBool(v); return err }),
		env("webhook_allow", "VIGIL_WEBHOOK_ALLOW", func(v string) error { s.WebhookAllow = strings.Split(v, ","); return nil }),
		env("recipient_max_refs", "VIGIL_RECIPIENT_MAX_REFS", func(v string) (err error) { s.MaxRefs, err = strconv.Atoi(v); return err }),
		env("recipient_max_pending", "VIGIL_RECIPIENT_MAX_PENDING", func(v string) (err error) { s.MaxPending, err = strconv.Atoi(v); return err }),
		env("store", "VIGIL_STORE", func(v string) error { s.Store.NATS.URLs = strings.Split(v, ","); return nil }),
	); err != nil {
		return s, err
	}

	for _, f := range []struct {
		flag, key string
		apply     func()
	}{
		{"listen", "listen", func() { s.Listen, _ = flags.GetString("listen") }},
		{"debug-listen", "debug_listen", func() { s.DebugListen, _ = flags.GetString("debug-listen") }},
		{"data", "data", func() { s.Data, _ = flags.GetString("data") }},
		{"plugin-cache", "plugin_cache", func() { s.PluginCache, _ = flags.GetString("plugin-cache") }},
		{"plugins", "plugins", func() { s.Plugins, _ = flags.GetString("plugins") }},
		{"workers", "workers", func() { s.Workers, _ = flags.GetInt("workers") }},
		{"fsync", "fsync", func() { s.Fsync, _ = flags.GetBool("fsync") }},
		{"webhook-allow", "webhook_allow", func() { s.WebhookAllow, _ = flags.GetStringArray("webhook-allow") }},
		{"recipient-max-refs", "recipient_max_refs", func() { s.MaxRefs, _ = flags.GetInt("recipient-max-refs") }},
		{"recipient-max-pending", "recipient_max_pending", func() { s.MaxPending, _ = flags.GetInt("recipient-max-pending") }},
		{"store", "store", func() { v, _ := flags.GetString("store"); s.Store.NATS.URLs = strings.Split(v, ",") }},
	} {
		if flags.Changed(f.flag) {
			f.apply()
			sources[f.key] = "--" + f.flag
		}
	}
	return s, s.validate(sources)
}

// pluginCache is the wazero compilation cache's directory: the setting
// (plugin_cache, VIGIL_PLUGIN_CACHE, --plugin-cache), or vigil/wazero in
// the user's cache directory (os.UserCacheDir: $XDG_CACHE_HOME or
// ~/.cache on Linux). serve, vigil plugins and vigil plugin try share it,
// so a plugin compiled by one is not compiled again by the next, and none
// of them writes into the current directory. Beneath it wazero keeps one
// directory per wazero version, architecture and OS
// (wazero-v1.12.0-amd64-linux), so two builds of vigil never read each
// other's code.
func (s settings) pluginCache() (string, error) {
	if s.PluginCache != "" {
		return s.PluginCache, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", &configError{Key: "plugin_cache", Source: "the default", Err: fmt.Errorf("no user cache directory to keep compiled plugins in (%w): set --plugin-cache, plugin_cache or VIGIL_PLUGIN_CACHE", err)}
	}
	return filepath.Join(dir, "vigil", "wazero"), nil
}

func (s settings) validate(sources map[string]string) error {
	var errs []error
	bad := func(key string, err error) {
		errs = append(errs, &configError{Key: key, Source: sources[key], Err: err})
	}
	if s.Data == "" {
		bad("data", errors.New("must not be empty"))
	}
	if s.Workers < 1 || s.Workers > scheduler.MaxWorkers {
		bad("workers", fmt.Errorf("%d: want 1 to %d", s.Workers, scheduler.MaxWorkers))
	}
	for _, c := range s.WebhookAllow {
		if _, err := netip.ParsePrefix(strings.TrimSpace(c)); err != nil {
			bad("webhook_allow", err)
		}
	}
	if s.MaxRefs < 0 || s.MaxRefs > maxRefsBound {
		bad("recipient_max_refs", fmt.Errorf("%d: want 1 to %d (0 for the default, %d)", s.MaxRefs, maxRefsBound, recipients.DefaultMaxRefs))
	}
	if s.MaxPending < 0 || s.MaxPending > maxPendingBound {
		bad("recipient_max_pending", fmt.Errorf("%d: want 1 to %d (0 for the default, %d)", s.MaxPending, maxPendingBound, recipients.DefaultMaxPending))
	}
	if len(s.Tokens) > 0 {
		if _, err := authz.Compile(s.authTokens()); err != nil {
			bad("tokens", err)
		}
	}
	switch f := s.Fetch; {
	case f.MaxTimeout < 0 || f.MaxTimeout > 10*time.Minute:
		bad("fetch", fmt.Errorf("max_timeout %s: want up to 10m (0 for the default, 120s)", f.MaxTimeout))
	case f.MaxFetchTime < 0 || f.MaxFetchTime > 30*time.Minute:
		bad("fetch", fmt.Errorf("max_fetch_time %s: want up to 30m (0 for the default, 120s or max_timeout if longer)", f.MaxFetchTime))
	case f.MaxFetchTime != 0 && f.MaxFetchTime < cmp.Or(f.MaxTimeout, fetch.DefaultMaxTimeout):
		bad("fetch", fmt.Errorf("max_fetch_time %s is under max_timeout %s: one operation of a fetch could outlast the whole", f.MaxFetchTime, cmp.Or(f.MaxTimeout, fetch.DefaultMaxTimeout)))
	case f.MinInterval < 0 || f.MinInterval > time.Hour:
		bad("fetch", fmt.Errorf("min_interval %s: want up to 1h (0 for the default, 1s)", f.MinInterval))
	case f.MaxBodyBytes < 0 || f.MaxBodyBytes > 64<<20:
		bad("fetch", fmt.Errorf("max_body_bytes %d: want up to 64 MiB (0 for the default, 1 MiB)", f.MaxBodyBytes))
	case strings.ContainsFunc(f.UserAgent, func(r rune) bool { return r < 0x20 || r > 0x7e }):
		bad("fetch", errors.New("user_agent: printable ASCII only"))
	}
	if !(s.Observe.Rate >= 0 || s.Observe.Rate == -1) || s.Observe.Burst < 0 || s.Observe.Burst > 1_000_000 { // NaN (.nan) is no rate
		bad("observe", fmt.Errorf("rate %g, burst %d: want a rate of 0 (the default, 100/s) or more, or -1 for no limit, and a burst of 0 (the default, 200) to 1000000", s.Observe.Rate, s.Observe.Burst))
	}
	if n := s.Observe.RunPerMinute; n < -1 || n > 1_000_000 {
		bad("observe", fmt.Errorf("run_per_minute %d: want 0 (the default, %d new items a minute per run) to 1000000, or -1 for no limit", n, observe.DefaultRunPerMinute))
	}
	if err := (observe.Config{Scopes: s.Scopes}).Validate(store.ValidRecipientID); err != nil {
		bad("scopes", err)
	}
	for name := range s.Secrets {
		if err := abi.CheckSecretName(name); err != nil {
			bad("secrets", err)
		}
	}
	for _, err := range s.Store.validate() {
		src := sources["store"]
		if ne, ok := errors.AsType[*natsSettingError](err); ok && ne.Key != "urls" {
			src = sources["store.nats"] // set in the file, whatever gave the urls
		}
		errs = append(errs, &configError{Key: "store", Source: src, Err: err})
	}
	if len(s.Tokens) == 0 {
		if err := loopbackOnly(s.Listen); err != nil {
			bad("listen", err)
		}
	}
	if s.DebugListen != "" {
		if err := debugLoopback(s.DebugListen); err != nil {
			bad("debug_listen", err)
		}
	}
	return errors.Join(errs...)
}

// resolveSecrets reads each secret's value: "env:NAME" from the
// environment, "file:PATH" from a file (surrounding whitespace trimmed),
// anything else as written. A reference that yields nothing is an error
// naming the secret, never its value.
func (s settings) resolveSecrets(getenv func(string) string) (map[string]string, error) {
	out := make(map[string]string, len(s.Secrets))
	var errs []error
	for name, ref := range s.Secrets {
		v, err := resolveRef("secrets."+name, ref, getenv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[name] = v
	}
	return out, errors.Join(errs...)
}

// resolveRef reads one secret reference (resolveSecrets); key names it in
// an error, never its value.
func resolveRef(key, ref string, getenv func(string) string) (string, error) {
	var v string
	switch {
	case strings.HasPrefix(ref, "env:"):
		v = getenv(strings.TrimPrefix(ref, "env:"))
	case strings.HasPrefix(ref, "file:"):
		b, err := os.ReadFile(strings.TrimPrefix(ref, "file:"))
		if err != nil {
			return "", &configError{Key: key, Source: "the config file", Err: err}
		}
		v = strings.TrimSpace(string(b))
	default:
		v = ref
	}
	if v == "" {
		return "", &configError{Key: key, Source: "the config file", Err: errors.New("the secret is empty (an env: variable unset, or an empty file or value)")}
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		return "", &configError{Key: key, Source: "the config file", Err: errors.New("the value holds a byte outside printable ASCII")}
	}
	return v, nil
}

// hooks is the hook sources with their secrets read (resolveRef) and
// checked whole (hooks.Config.Validate); nil when none is configured.
func (s settings) hooks(getenv func(string) string) (hooks.Config, error) {
	if len(s.Hooks) == 0 {
		return nil, nil
	}
	out := make(hooks.Config, len(s.Hooks))
	var errs []error
	for name, src := range s.Hooks {
		v, err := resolveRef("hooks."+name+".secret", src.Secret, getenv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		src.Secret = v
		out[name] = src
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := out.Validate(); err != nil {
		return nil, &configError{Key: "hooks", Source: "the config file", Err: err}
	}
	return out, nil
}

func (s settings) allowPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, c := range s.WebhookAllow {
		if p, err := netip.ParsePrefix(strings.TrimSpace(c)); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// authTokens is the tokens and grants as internal/authz takes them.
func (s settings) authTokens() []authz.Token {
	if len(s.Tokens) == 0 {
		return nil
	}
	out := make([]authz.Token, 0, len(s.Tokens))
	for _, t := range s.Tokens {
		out = append(out, authz.Token{Principal: t.Principal, Token: t.Token, Grant: authz.Grant{
			Recipients: t.Recipients, RegisterFor: t.RegisterFor, Scopes: t.Scopes, Roles: t.Roles,
		}})
	}
	return out
}
