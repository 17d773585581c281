package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// --store, VIGIL_STORE and store.nats choose JetStream, with the usual
// precedence; without them the store is badger.
func TestStoreSettingChoosesTheBackend(t *testing.T) {
	s, err := settingsFor(t, nil, nil, "")
	if err != nil || s.Store.clustered() {
		t.Fatalf("default: clustered %v, %v", s.Store.clustered(), err)
	}
	if c, err := s.Store.cluster(nil); c != nil || err != nil {
		t.Fatalf("badger makes a cluster config %+v, %v", c, err)
	}
	file := "store:\n  nats:\n    urls: [nats://file:4222]\n    replicas: 3\n    partitions: 128\n    bucket: prod\n    node: n-1\n    lease_ttl: 4s\n    start_timeout: 2m\n    credentials: /etc/nats.creds\n    tls: {ca: ca.pem, cert: c.pem, key: k.pem}\n"
	s, err = settingsFor(t, nil, nil, file)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Store.cluster(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Node != "n-1" || c.LeaseTTL != 4*time.Second || c.Open == nil {
		t.Fatalf("from the file: %+v", c)
	}
	if nc := s.Store.NATS.storeConfig(nil); nc.Replicas != 3 || nc.Partitions != 128 || nc.Bucket != "prod" || nc.StartTimeout != 2*time.Minute ||
		nc.CredsFile != "/etc/nats.creds" || nc.TLS.CA != "ca.pem" || nc.TLS.Cert != "c.pem" || nc.TLS.Key != "k.pem" || nc.URLs[0] != "nats://file:4222" {
		t.Fatalf("from the file: %+v", nc)
	}
	env := map[string]string{"VIGIL_STORE": "nats://env:4222,nats://env2:4222"}
	if s, err = settingsFor(t, nil, env, file); err != nil || strings.Join(s.Store.NATS.URLs, " ") != "nats://env:4222 nats://env2:4222" || s.Store.NATS.Replicas != 3 {
		t.Fatalf("env over file: %+v, %v", s.Store, err)
	}
	if s, err = settingsFor(t, []string{"--store", "tls://flag:4222"}, env, file); err != nil || strings.Join(s.Store.NATS.URLs, " ") != "tls://flag:4222" {
		t.Fatalf("flag over env: %+v, %v", s.Store, err)
	}
	// Defaults: the host name as the node's name, a 10 s lease.
	s, err = settingsFor(t, []string{"--store", "nats://127.0.0.1:4222"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if c, err = s.Store.cluster(nil); err != nil || c.LeaseTTL != 10*time.Second || !bucketName.MatchString(c.Node) {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
}

// A bad value under store refuses to start, naming the setting.
func TestInvalidStoreSettingsNameTheSetting(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		file string
		from string
		says string
	}{
		{"flag scheme", []string{"--store", "http://a:4222"}, nil, "", "--store", "nats.urls"},
		{"flag no port", []string{"--store", "nats://a"}, nil, "", "--store", "nats.urls"},
		{"flag one bad of two", []string{"--store", "nats://a:4222,nats:/b"}, nil, "", "--store", "nats.urls"},
		{"env user in url", nil, map[string]string{"VIGIL_STORE": "nats://u:p@a:4222"}, "", "VIGIL_STORE", "credentials"},
		{"env path", nil, map[string]string{"VIGIL_STORE": "nats://a:4222/x"}, "", "VIGIL_STORE", "nats.urls"},
		{"file replicas", nil, nil, "store: {nats: {urls: [nats://a:4222], replicas: 2}}\n", "vigil.yaml", "nats.replicas"},
		{"file partitions", nil, nil, "store: {nats: {urls: [nats://a:4222], partitions: 5000}}\n", "vigil.yaml", "nats.partitions"},
		{"file negative partitions", nil, nil, "store: {nats: {urls: [nats://a:4222], partitions: -1}}\n", "vigil.yaml", "nats.partitions"},
		{"file bucket", nil, nil, "store: {nats: {urls: [nats://a:4222], bucket: a.b}}\n", "vigil.yaml", "nats.bucket"},
		{"file node", nil, nil, "store: {nats: {urls: [nats://a:4222], node: 'a b'}}\n", "vigil.yaml", "nats.node"},
		{"file short ttl", nil, nil, "store: {nats: {urls: [nats://a:4222], lease_ttl: 100ms}}\n", "vigil.yaml", "nats.lease_ttl"},
		{"file long ttl", nil, nil, "store: {nats: {urls: [nats://a:4222], lease_ttl: 1h}}\n", "vigil.yaml", "nats.lease_ttl"},
		{"file short start timeout", nil, nil, "store: {nats: {urls: [nats://a:4222], start_timeout: 100ms}}\n", "vigil.yaml", "nats.start_timeout"},
		{"file long start timeout", nil, nil, "store: {nats: {urls: [nats://a:4222], start_timeout: 2h}}\n", "vigil.yaml", "nats.start_timeout"},
		{"file negative start timeout", nil, nil, "store: {nats: {urls: [nats://a:4222], start_timeout: -1s}}\n", "vigil.yaml", "nats.start_timeout"},
		{"flag urls, file replicas", []string{"--store", "nats://a:4222"}, nil, "store: {nats: {replicas: 2}}\n", "vigil.yaml", "nats.replicas"},
		{"env urls, file partitions", nil, map[string]string{"VIGIL_STORE": "nats://a:4222"}, "store: {nats: {partitions: 5000}}\n", "vigil.yaml", "nats.partitions"},
		{"file cert without key", nil, nil, "store: {nats: {urls: [nats://a:4222], tls: {cert: c.pem}}}\n", "vigil.yaml", "nats.tls"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := settingsFor(t, tt.args, tt.env, tt.file)
			var ce *configError
			if !errors.As(err, &ce) || ce.Key != "store" || !strings.Contains(ce.Source, tt.from) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	_, err := settingsFor(t, nil, nil, "store: {nats: {urls: [nats://a:4222], replica: 3}}\n")
	var ce *configError
	if !errors.As(err, &ce) || ce.Key != "replica" {
		t.Fatalf("an unknown key under store.nats: %v", err)
	}
}

// A sanitized host name is a valid node name or empty; an accepted URL
// has a scheme, a host and a port and nothing else.
func FuzzStoreSettings(f *testing.F) {
	for _, s := range []string{"nats://127.0.0.1:4222", "host.example.com", "tls://[::1]:4222", "nats://a:1/", "ñ.local", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n := sanitizeNodeName(s); n != "" && !bucketName.MatchString(n) {
			t.Fatalf("sanitizeNodeName(%q) = %q, not a node name", s, n)
		}
		if checkNATSURL(s) == nil {
			if l := strings.ToLower(strings.TrimSpace(s)); !strings.HasPrefix(l, "nats://") && !strings.HasPrefix(l, "tls://") {
				t.Fatalf("accepted %q", s)
			}
		}
	})
}
