package authztest

import (
	"maps"
	"slices"
	"testing"

	"github.com/vigilhq/vigil/internal/authz"
)

// Guard puts in force a policy of tokens (token → principal), every one
// granted roles and acting for the recipient of its own name.
func Guard(t testing.TB, tokens map[string]string, roles ...authz.Role) *authz.Guard {
	t.Helper()
	var ts []authz.Token
	for _, tok := range slices.Sorted(maps.Keys(tokens)) {
		ts = append(ts, authz.Token{Token: tok, Principal: tokens[tok], Grant: authz.Grant{Roles: roles}})
	}
	p, err := authz.Compile(ts)
	if err != nil {
		t.Fatal(err)
	}
	return authz.NewGuard(p)
}
