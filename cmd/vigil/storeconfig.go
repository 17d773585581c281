package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/vigilhq/vigil/internal/cluster"
	"github.com/vigilhq/vigil/internal/core"
	"github.com/vigilhq/vigil/store/natsstore"
)

// storeSettings chooses serve's backend: badger in the data directory
// unless store.nats names servers.
type storeSettings struct {
	NATS natsSettings `yaml:"nats"`
}

// natsSettings make the host a node of a JetStream cluster (store.nats in
// the file; --store or VIGIL_STORE set the URLs alone).
type natsSettings struct {
	// URLs are the servers, nats:// or tls:// host:port each.
	URLs []string `yaml:"urls"`
	// Credentials is a NATS credentials file.
	Credentials string      `yaml:"credentials"`
	TLS         natsTLSFile `yaml:"tls"`
	// Replicas and Partitions are fixed when the cluster's store is
	// created; 0 takes what the store has (1 and 64 when creating it).
	Replicas   int    `yaml:"replicas"`
	Partitions int    `yaml:"partitions"`
	Bucket     string `yaml:"bucket"`
	// Node is this node's name in the cluster, unique in it (default the
	// host name, sanitized).
	Node string `yaml:"node"`
	// LeaseTTL is every lease's (default 10 s).
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	// StartTimeout is how long serve waits at start for JetStream to
	// answer (no server up yet, or no meta leader) before it fails
	// (default 60 s).
	StartTimeout time.Duration `yaml:"start_timeout"`
}

type natsTLSFile struct {
	CA   string `yaml:"ca"`
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// Bounds of the cluster settings.
const (
	defaultLeaseTTL = 10 * time.Second
	maxLeaseTTL     = 5 * time.Minute
	// minStartTimeout and maxStartTimeout bound store.nats.start_timeout:
	// below a second one unanswered request would use it up; past an
	// hour a node pointed at the wrong servers waits too long to say so.
	minStartTimeout = time.Second
	maxStartTimeout = time.Hour
	// maxPartitions: every partition is a lease renewed a third of the
	// TTL apart; past a thousand the renewals are most of the traffic.
	maxPartitions = 1024
)

var (
	bucketName    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	nodeNameChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
)

// natsSettingError is what is wrong with one key under store.nats: Key
// names it ("urls", "replicas"), so the error can say where it was set
// (only urls come from --store or VIGIL_STORE).
type natsSettingError struct {
	Key string
	Err error
}

func (e *natsSettingError) Error() string { return "nats." + e.Key + ": " + e.Err.Error() }
func (e *natsSettingError) Unwrap() error { return e.Err }

// clustered says whether the settings make a cluster node.
func (s storeSettings) clustered() bool { return len(s.NATS.URLs) > 0 }

// validate says what is wrong with the cluster settings, each naming its
// key under store.nats; nothing when badger is chosen.
func (s storeSettings) validate() []error {
	n := s.NATS
	if !s.clustered() {
		return nil
	}
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, &natsSettingError{Key: key, Err: fmt.Errorf(format, a...)})
	}
	for _, u := range n.URLs {
		if err := checkNATSURL(u); err != nil {
			bad("urls", "%v", err)
		}
	}
	if r := n.Replicas; r != 0 && r != 1 && r != 3 && r != 5 {
		bad("replicas", "%d: want 1, 3 or 5 (0 for what the store has)", r)
	}
	if p := n.Partitions; p < 0 || p > maxPartitions {
		bad("partitions", "%d: want 1 to %d (0 for what the store has, %d when creating it)", p, maxPartitions, 64)
	}
	if n.Bucket != "" && !bucketName.MatchString(n.Bucket) {
		bad("bucket", "%q: want 1 to 64 of A-Z a-z 0-9 _ -", n.Bucket)
	}
	if n.Node != "" && !bucketName.MatchString(n.Node) {
		bad("node", "%q: want 1 to 64 of A-Z a-z 0-9 _ -", n.Node)
	}
	if t := n.LeaseTTL; t != 0 && (t < cluster.MinTTL || t > maxLeaseTTL) {
		bad("lease_ttl", "%s: want %s to %s (0 for the default, %s)", t, cluster.MinTTL, maxLeaseTTL, defaultLeaseTTL)
	}
	if t := n.StartTimeout; t != 0 && (t < minStartTimeout || t > maxStartTimeout) {
		bad("start_timeout", "%s: want %s to %s (0 for the default, %s)", t, minStartTimeout, maxStartTimeout, natsstore.DefaultStartTimeout)
	}
	if (n.TLS.Cert == "") != (n.TLS.Key == "") {
		bad("tls", "a certificate needs its key, and a key its certificate")
	}
	return errs
}

// checkNATSURL accepts nats://host:port or tls://host:port, nothing
// more: a path, a query or a user in the URL would be ignored or leak.
func checkNATSURL(raw string) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return fmt.Errorf("%q: %w", raw, err)
	}
	if u.Scheme != "nats" && u.Scheme != "tls" {
		return fmt.Errorf("%q: want nats://host:port or tls://host:port", raw)
	}
	if u.User != nil {
		return fmt.Errorf("%q: credentials go in store.nats.credentials, not the URL", raw)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: a server URL has no path, query or fragment", raw)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("%q: want host:port", raw)
	}
	return nil
}

// nodeName is this node's name: the setting, or the host name with what
// a lease key cannot hold replaced by "-".
func (n natsSettings) nodeName() (string, error) {
	if n.Node != "" {
		return n.Node, nil
	}
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("store.nats.node: none set and no host name: %w", err)
	}
	name := sanitizeNodeName(h)
	if name == "" {
		return "", errors.New("store.nats.node: none set and the host name has nothing usable; set one")
	}
	return name, nil
}

func sanitizeNodeName(h string) string {
	name := strings.Trim(nodeNameChars.ReplaceAllString(h, "-"), "-")
	if len(name) > 64 {
		name = strings.TrimRight(name[:64], "-")
	}
	return name
}

// leaseTTL is the setting or its default.
func (n natsSettings) leaseTTL() time.Duration {
	if n.LeaseTTL == 0 {
		return defaultLeaseTTL
	}
	return n.LeaseTTL
}

// cluster is the core's cluster configuration, nil for badger; log
// receives the store's connection events.
func (s storeSettings) cluster(log *slog.Logger) (*core.Cluster, error) {
	if !s.clustered() {
		return nil, nil
	}
	n := s.NATS
	name, err := n.nodeName()
	if err != nil {
		return nil, err
	}
	cfg := n.storeConfig(log)
	return &core.Cluster{
		Open: func(ctx context.Context) (core.ClusterStore, error) {
			st, err := natsstore.Open(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return st, nil
		},
		Node: name, LeaseTTL: n.leaseTTL(),
	}, nil
}

// storeConfig is natsstore's configuration from the settings.
func (n natsSettings) storeConfig(log *slog.Logger) natsstore.Config {
	urls := make([]string, len(n.URLs))
	for i, u := range n.URLs {
		urls[i] = strings.TrimSpace(u)
	}
	return natsstore.Config{
		URLs: urls, CredsFile: n.Credentials, TLS: natsstore.TLS{CA: n.TLS.CA, Cert: n.TLS.Cert, Key: n.TLS.Key},
		Replicas: n.Replicas, Partitions: n.Partitions, Bucket: n.Bucket, StartTimeout: n.StartTimeout, Logger: log,
	}
}

// label says where the store is, for the start-up log line.
func (s storeSettings) label() string {
	if !s.clustered() {
		return "badger"
	}
	return "nats " + strings.Join(s.NATS.URLs, ",")
}
