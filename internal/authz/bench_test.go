package authz

import (
	"crypto/subtle"
	"fmt"
	"testing"
)

// BenchmarkAuthenticate finds a request's principal among n tokens: the
// policy's SHA-256 lookup, beside the design it replaced (each token
// compared in constant time, in a loop over all of them).
func BenchmarkAuthenticate(b *testing.B) {
	for _, n := range []int{1, 100, 10_000} {
		tokens := make([]Token, n)
		byToken := make(map[string]string, n)
		for i := range tokens {
			tokens[i] = Token{Principal: fmt.Sprintf("p%d", i), Token: fmt.Sprintf("token-%032d", i)}
			byToken[tokens[i].Token] = tokens[i].Principal
		}
		p, err := Compile(tokens)
		if err != nil {
			b.Fatal(err)
		}
		bearer := tokens[n/2].Token
		b.Run(fmt.Sprintf("design=sha256/tokens=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, ok := p.Authenticate(bearer); !ok {
					b.Fatal("not found")
				}
			}
		})
		b.Run(fmt.Sprintf("design=loop/tokens=%d", n), func(b *testing.B) {
			for b.Loop() {
				found := ""
				for tok, name := range byToken {
					if subtle.ConstantTimeCompare([]byte(bearer), []byte(tok)) == 1 {
						found = name
					}
				}
				if found == "" {
					b.Fatal("not found")
				}
			}
		})
	}
}

// BenchmarkAllows is one route's decision: a principal acting for a few
// patterns deciding about a recipient it does not act for (the longest
// path through the patterns).
func BenchmarkAllows(b *testing.B) {
	p, err := Compile([]Token{{Principal: "agent-7", Token: "0123456789abcdef", Grant: Grant{
		Recipients: []string{"agent-7", "team-a-*", "team-b-*", "lead"}, Scopes: []string{"support"},
	}}})
	if err != nil {
		b.Fatal(err)
	}
	pr, _ := p.Authenticate("0123456789abcdef")
	a := Action{Verb: SeeWatch, Recipient: "agent-8", RegisteredBy: "orch"}
	for b.Loop() {
		if pr.Allows(a) {
			b.Fatal("allowed")
		}
	}
}
