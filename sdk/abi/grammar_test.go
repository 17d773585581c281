package abi

import (
	"strings"
	"testing"
)

func TestValidKind(t *testing.T) {
	for s, want := range map[string]bool{
		"timer": true, "ci": true, "example.http-status": true, "a_b.c-9": true,
		strings.Repeat("a", 64): true, strings.Repeat("a", 65): false,
		"": false, "Timer": false, "a b": false, "a/b": false, "é": false,
	} {
		if got := ValidKind(s); got != want {
			t.Errorf("ValidKind(%q) = %v", s, got)
		}
		if err := CheckKind(s); (err == nil) != want {
			t.Errorf("CheckKind(%q) = %v", s, err)
		}
	}
}

func TestValidSemver(t *testing.T) {
	for s, want := range map[string]bool{
		"1.0.0": true, "0.1.2-rc.1": true, "1.2.3+build.5": true, "10.20.30": true,
		"v1.0.0": false, "1.0": false, "01.0.0": false, "1.0.0-": false, "": false,
	} {
		if got := ValidSemver(s); got != want {
			t.Errorf("ValidSemver(%q) = %v", s, got)
		}
	}
}

func TestHostGranted(t *testing.T) {
	grants := []string{"api.github.com", "*.example.org"}
	for host, want := range map[string]bool{
		"api.github.com":  true,
		"API.GitHub.com":  true,
		"api.github.com.": true,
		"github.com":      false,
		"a.example.org":   true,
		"a.b.example.org": true,
		"example.org":     false,
		"badexample.org":  false,
		"":                false,
	} {
		if got := HostGranted(grants, host); got != want {
			t.Errorf("HostGranted(%q) = %v, want %v", host, got, want)
		}
	}
	if !HostGranted([]string{"*"}, "anything.test") || HostGranted(nil, "api.github.com") {
		t.Error("* must grant any host and no grant none")
	}
}
