package abi

import (
	"fmt"
	"regexp"
	"strings"
)

// MaxKindLen bounds a kind name.
const MaxKindLen = 64

// ValidKind reports whether s is a kind name: lower case letters, digits,
// '.', '_' and '-', 1 to 64 bytes.
func ValidKind(s string) bool {
	if len(s) == 0 || len(s) > MaxKindLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// semverRe is the grammar of semver.org 2.0.0.
var semverRe = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// ValidSemver reports whether s is a semantic version (2.0.0), without a
// leading "v".
func ValidSemver(s string) bool { return semverRe.MatchString(s) }

// CheckKind returns a descriptive error when s is not a kind name.
func CheckKind(s string) error {
	if !ValidKind(s) {
		return fmt.Errorf("kind %q: want 1-%d of a-z 0-9 . _ -", s, MaxKindLen)
	}
	return nil
}

// CheckSecretName returns a descriptive error when s cannot name a secret in
// the host's configuration. Secret names follow the kind grammar.
func CheckSecretName(s string) error {
	if !ValidKind(s) {
		return fmt.Errorf("secret name %q: want 1-%d of a-z 0-9 . _ -", s, MaxKindLen)
	}
	return nil
}

// HostGranted reports whether host (a name or an IP literal, without a
// port) is among the granted fetch hosts. A pattern is an exact host name,
// compared without regard to case; "*.example.com", which matches every
// name under example.com but not example.com itself; or "*", which matches
// any host. A grant says which hosts a plugin may name: the destination
// guard still refuses private addresses whatever the grant.
func HostGranted(patterns []string, host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return false
	}
	for _, p := range patterns {
		p = strings.TrimSuffix(strings.ToLower(p), ".")
		switch {
		case p == "*":
			return true
		case strings.HasPrefix(p, "*."):
			if strings.HasSuffix(host, p[1:]) && len(host) > len(p)-1 {
				return true
			}
		case p == host:
			return true
		}
	}
	return false
}
