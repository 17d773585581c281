package kind

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// The digest is of the set: the order plugins load in does not change it;
// a version or a hash does.
func TestSetDigestIsOfTheSet(t *testing.T) {
	a := Info{Kind: "timer", Version: "1.0.0", SHA256: "aa"}
	b := Info{Kind: "http", Version: "2.0.0", SHA256: "bb"}
	if SetDigest([]Info{a, b}) != SetDigest([]Info{b, a}) {
		t.Fatal("the digest depends on the load order")
	}
	for _, other := range [][]Info{{a}, {a, {Kind: "http", Version: "2.0.1", SHA256: "bb"}}, {a, {Kind: "http", Version: "2.0.0", SHA256: "bc"}}} {
		if SetDigest(other) == SetDigest([]Info{a, b}) {
			t.Fatalf("%v has the digest of another set", other)
		}
	}
}

// The plugin set digest is the SHA-256 of the sorted kind/version/sha256
// lines: the order the runtime lists kinds in does not change it, a
// changed sha256 does.
func TestSetDigestIsTheSHA256OfTheSortedLines(t *testing.T) {
	a := []Info{{Kind: "timer", Version: "1.0.0", SHA256: "aa"}, {Kind: "ci", Version: "1.2.0", SHA256: "bb"}}
	b := []Info{a[1], a[0]}
	if SetDigest(a) != SetDigest(b) {
		t.Error("the digest depends on the order")
	}
	c := []Info{a[0], {Kind: "ci", Version: "1.2.0", SHA256: "bc"}}
	if SetDigest(a) == SetDigest(c) {
		t.Error("a changed sha256 keeps the digest")
	}
	sum := sha256.Sum256([]byte("ci 1.2.0 bb\ntimer 1.0.0 aa\n"))
	if got := SetDigest(a); got != hex.EncodeToString(sum[:]) {
		t.Errorf("digest %q", got)
	}
}
