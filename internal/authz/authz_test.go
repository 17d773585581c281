package authz

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/store"
)

func compile(t *testing.T, tokens ...Token) *Policy {
	t.Helper()
	p, err := Compile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func principalOf(t *testing.T, p *Policy, token string) *Principal {
	t.Helper()
	pr, ok := p.Authenticate(token)
	if !ok {
		t.Fatalf("token %q authenticates nobody", token)
	}
	return pr
}

const (
	tokAgent = "token-of-agent-7-0000"
	tokOrch  = "token-of-orchestrator"
	tokOps   = "token-of-the-operator"
	tokAdmin = "token-of-the-admin-00"
	tokTeam  = "token-of-the-team-000"
)

func policy(t *testing.T) *Policy {
	return compile(t,
		Token{Principal: "agent-7", Token: tokAgent, Grant: Grant{Scopes: []string{"support"}}},
		Token{Principal: "orch", Token: tokOrch, Grant: Grant{Roles: []Role{Orchestrator}, RegisterFor: []string{"worker-*"}}},
		Token{Principal: "ops", Token: tokOps, Grant: Grant{Roles: []Role{Operator}}},
		Token{Principal: "root", Token: tokAdmin, Grant: Grant{Roles: []Role{Admin}}},
		Token{Principal: "team", Token: tokTeam, Grant: Grant{Recipients: []string{"team-*", "lead"}, Scopes: []string{"s-*"}}},
	)
}

// Each verb, for each kind of principal: what the grant allows and
// nothing more.
func TestAllows(t *testing.T) {
	p := policy(t)
	rows := []struct {
		token string
		a     Action
		want  bool
	}{
		{tokAgent, Action{Verb: ActFor, Recipient: "agent-7"}, true},
		{tokAgent, Action{Verb: ActFor, Recipient: "agent-8"}, false},
		{tokAgent, Action{Verb: ActFor, Recipient: "agent-70"}, false}, // a name, not a prefix
		{tokAgent, Action{Verb: Read, Recipient: "agent-8"}, false},
		{tokAgent, Action{Verb: Register, Recipient: "agent-7"}, true},
		{tokAgent, Action{Verb: Register, Recipient: "worker-1"}, false},
		{tokAgent, Action{Verb: SeeWatch, Recipient: "worker-1", RegisteredBy: "agent-7"}, true}, // it registered it
		{tokAgent, Action{Verb: SeeWatch, Recipient: "worker-1", RegisteredBy: "orch"}, false},
		{tokAgent, Action{Verb: SeeWatch, Recipient: "worker-1"}, false}, // no registrant is nobody's
		{tokAgent, Action{Verb: ReadScope, Scope: "support"}, true},
		{tokAgent, Action{Verb: ReadScope, Scope: "billing"}, false},
		{tokAgent, Action{Verb: WorkScope, Scope: "support"}, true},
		{tokAgent, Action{Verb: SeeWork, Scope: "billing", Recipient: "agent-7"}, true}, // it claimed it
		{tokAgent, Action{Verb: SeeWork, Scope: "billing"}, false},
		{tokAgent, Action{Verb: ListRegistered, RegisteredBy: "agent-7"}, true},
		{tokAgent, Action{Verb: ListRegistered, RegisteredBy: "orch"}, false},
		{tokAgent, Action{Verb: Operate}, false},
		{tokAgent, Action{Verb: Administer, What: "reload the plugins"}, false},

		{tokOrch, Action{Verb: Register, Recipient: "worker-1"}, true},
		{tokOrch, Action{Verb: Register, Recipient: "boss"}, false},
		{tokOrch, Action{Verb: ActFor, Recipient: "worker-1"}, false}, // registering is not acting for
		{tokOrch, Action{Verb: Read, Recipient: "worker-1"}, false},
		{tokOrch, Action{Verb: SeeWatch, Recipient: "worker-1", RegisteredBy: "orch"}, true},
		{tokOrch, Action{Verb: ChangeWatch, Recipient: "worker-1", RegisteredBy: "orch"}, true},
		{tokOrch, Action{Verb: ChangeWatch, Recipient: "worker-1", RegisteredBy: "worker-1"}, false},
		{tokOrch, Action{Verb: ActFor, Recipient: "orch"}, true},

		{tokOps, Action{Verb: Read, Recipient: "anyone"}, true},
		{tokOps, Action{Verb: SeeWatch, Recipient: "anyone"}, true},
		{tokOps, Action{Verb: ChangeWatch, Recipient: "anyone"}, false},
		{tokOps, Action{Verb: ActFor, Recipient: "anyone"}, false},
		{tokOps, Action{Verb: Register, Recipient: "anyone"}, false},
		{tokOps, Action{Verb: ReadScope, Scope: "billing"}, true},
		{tokOps, Action{Verb: WorkScope, Scope: "billing"}, false},
		{tokOps, Action{Verb: ListRegistered, RegisteredBy: "orch"}, true},
		{tokOps, Action{Verb: Operate}, true},
		{tokOps, Action{Verb: Administer, What: "reload the plugins"}, false},

		{tokAdmin, Action{Verb: Administer, What: "reload the plugins"}, true},
		{tokAdmin, Action{Verb: ActFor, Recipient: "anyone"}, true},
		{tokAdmin, Action{Verb: WorkScope, Scope: "billing"}, true},

		{tokTeam, Action{Verb: ActFor, Recipient: "team-a"}, true},
		{tokTeam, Action{Verb: ActFor, Recipient: "lead"}, true},
		{tokTeam, Action{Verb: ActFor, Recipient: "team"}, true}, // its own name, always
		{tokTeam, Action{Verb: ActFor, Recipient: "xteam-a"}, false},
		{tokTeam, Action{Verb: ReadScope, Scope: "s-1"}, true},
		{tokTeam, Action{Verb: ReadScope, Scope: "support"}, false},
	}
	for _, r := range rows {
		pr := principalOf(t, p, r.token)
		if got := pr.Allows(r.a); got != r.want {
			t.Errorf("%s %+v: %v, want %v", pr.Name, r.a, got, r.want)
		}
		err := pr.Check(r.a)
		var d *Denied
		if r.want != (err == nil) || !r.want && (!errors.As(err, &d) || !strings.Contains(err.Error(), "principal "+pr.Name+" may not")) {
			t.Errorf("%s %+v: Check %v", pr.Name, r.a, err)
		}
	}
}

// Unclaimed Work has no recipient: acting for every recipient is not
// working every scope.
func TestActingForAllSeesNoUnclaimedWork(t *testing.T) {
	pr := principalOf(t, compile(t, Token{Principal: "all", Token: tokTeam, Grant: Grant{Recipients: []string{"*"}}}), tokTeam)
	for _, r := range []struct {
		a    Action
		want bool
	}{
		{Action{Verb: SeeWork, Scope: "billing"}, false},
		{Action{Verb: SeeWork, Scope: "billing", Recipient: "anyone"}, true},
		{Action{Verb: WorkScope, Scope: "billing"}, false},
	} {
		if got := pr.Allows(r.a); got != r.want {
			t.Errorf("%+v: %v, want %v", r.a, got, r.want)
		}
	}
}

// A reload between no tokens and no tokens changes nothing; one from no
// tokens to tokens revokes the local principal, so what it held open ends.
func TestSwapFromTheLocalPolicy(t *testing.T) {
	g := NewGuard(Local())
	local := principalOf(t, g.Policy(), "")
	if n, err := g.Swap(Local()); n != 0 || err != nil || local.Revoked() || principalOf(t, g.Policy(), "") != local {
		t.Fatalf("no tokens to none: revoked %d, %v; local revoked %v", n, err, local.Revoked())
	}
	if n, err := g.Swap(policy(t)); n != 1 || err != nil || !local.Revoked() || g.Policy().Open() {
		t.Fatalf("no tokens to tokens: revoked %d, %v; local revoked %v", n, err, local.Revoked())
	}
}

// The refusal names what is missing, as an operator would grant it.
func TestDeniedNamesWhatIsMissing(t *testing.T) {
	pr := principalOf(t, policy(t), tokAgent)
	for _, c := range []struct {
		a    Action
		want string
	}{
		{Action{Verb: ActFor, Recipient: "agent-8"}, "principal agent-7 may not act for recipient agent-8 (grant: recipients)"},
		{Action{Verb: Register, Recipient: "w"}, "orchestrator role"},
		{Action{Verb: ReadScope, Scope: "billing"}, "may not read the Work of scope billing (grant: scopes, or the operator role)"},
		{Action{Verb: Administer, What: "reload the plugins"}, "may not reload the plugins (the admin role)"},
		{Action{Verb: Operate}, "the operator role"},
	} {
		if err := pr.Check(c.a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.a, err, c.want)
		}
	}
}

func TestAuthenticate(t *testing.T) {
	p := policy(t)
	for _, bad := range []string{"", "nope", tokAgent + "x", tokAgent[:len(tokAgent)-1]} {
		if _, ok := p.Authenticate(bad); ok {
			t.Errorf("%q authenticated", bad)
		}
	}
	if pr := principalOf(t, p, tokOrch); pr.Name != "orch" {
		t.Fatal(pr.Name)
	}
	local, ok := Local().Authenticate("")
	if !ok || local.Name != kind.LocalPrincipal || !local.Allows(Action{Verb: Administer}) || !local.Allows(Action{Verb: ActFor, Recipient: "anyone"}) {
		t.Fatalf("the local principal: %+v %v", local, ok)
	}
}

// Every problem of a config is found, each naming its entry and field,
// and no message holds a token.
func TestCompileNamesEachProblem(t *testing.T) {
	_, err := Compile([]Token{
		{Principal: "a b", Token: "0123456789abcdef"},
		{Principal: "b", Token: "short"},
		{Principal: "c", Token: "0123456789abcdef"},
		{Principal: "d", Token: "fedcba9876543210", Grant: Grant{Roles: []Role{"boss"}, Recipients: []string{"x/y"}, RegisterFor: []string{"w-*"}, Scopes: []string{"Support"}}},
		{Principal: "local", Token: "0123456789abcdeZ"},
	})
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("%v", err)
	}
	for _, want := range []string{"tokens[0].principal", "tokens[1].token", "tokens[2].token: principal c: the same token is given twice", "tokens[3].roles[0]", "tokens[3].recipients[0]", "tokens[3].register_for", "tokens[3].scopes[0]", "tokens[4].principal"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	for _, tok := range []string{"0123456789abcdef", "fedcba9876543210", "short"} {
		if strings.Contains(err.Error(), tok) {
			t.Errorf("the error holds token %q: %v", tok, err)
		}
	}
	if _, err := Compile(nil); err == nil {
		t.Fatal("no tokens compiled")
	}
}

// A reload keeps the principal of a token it leaves as it was, and
// revokes one removed or changed; it refuses to drop every token.
func TestSwapRevokesWhatChanged(t *testing.T) {
	g := NewGuard(policy(t))
	agent, orch, ops := principalOf(t, g.Policy(), tokAgent), principalOf(t, g.Policy(), tokOrch), principalOf(t, g.Policy(), tokOps)
	team := principalOf(t, g.Policy(), tokTeam)
	next := compile(t,
		Token{Principal: "agent-7", Token: tokAgent, Grant: Grant{Scopes: []string{"support"}}},                                      // as it was
		Token{Principal: "orch", Token: tokOrch, Grant: Grant{Roles: []Role{Orchestrator}}},                                          // widened
		Token{Principal: "team", Token: tokTeam, Grant: Grant{Recipients: []string{"team-*", "lead"}, Scopes: []string{"s-*", "t"}}}, // a scope more
		// ops and admin are gone
	)
	n, err := g.Swap(next)
	if err != nil || n != 4 || !team.Revoked() {
		t.Fatalf("revoked %d, %v", n, err)
	}
	if agent.Revoked() || principalOf(t, g.Policy(), tokAgent) != agent {
		t.Error("an unchanged token lost its principal")
	}
	if !orch.Revoked() || principalOf(t, g.Policy(), tokOrch) == orch {
		t.Error("a changed grant kept its principal")
	}
	if !ops.Revoked() || ops.Revocation().Err() == nil {
		t.Error("a removed token was not revoked")
	}
	if _, ok := g.Policy().Authenticate(tokOps); ok {
		t.Error("a removed token still authenticates")
	}
	if _, err := g.Swap(Local()); !errors.Is(err, ErrModeChange) {
		t.Fatalf("a reload to no tokens: %v", err)
	}
	if g.Policy().Open() || agent.Revoked() {
		t.Error("a refused reload changed the policy")
	}
}

// A pattern of the recipient grammar with * matches what path.Match
// would: an exact name only itself, * everything, a prefix pattern its
// prefix's names.
func TestPatternsProperty(t *testing.T) {
	id := rapid.StringMatching(`[a-z0-9][a-z0-9._:@-]{0,20}`)
	rapid.Check(t, func(t *rapid.T) {
		name, other := id.Draw(t, "name"), id.Draw(t, "other")
		if !store.ValidRecipientID(name) || !store.ValidRecipientID(other) {
			t.Skip()
		}
		prefix := name[:rapid.IntRange(0, len(name)).Draw(t, "cut")]
		p, err := Compile([]Token{
			{Principal: "x", Token: "0123456789abcdef", Grant: Grant{Recipients: []string{name}}},
			{Principal: "y", Token: "0123456789abcdeg", Grant: Grant{Recipients: []string{"*"}}},
			{Principal: "z", Token: "0123456789abcdeh", Grant: Grant{Recipients: []string{prefix + "*"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		exact, _ := p.Authenticate("0123456789abcdef")
		all, _ := p.Authenticate("0123456789abcdeg")
		pre, _ := p.Authenticate("0123456789abcdeh")
		// Each also acts for the recipient of its own name (x, y, z).
		if !exact.ActsFor(name) || exact.ActsFor(other) != (other == name || other == "x") {
			t.Fatalf("exact %q vs %q", name, other)
		}
		if !all.ActsFor(other) {
			t.Fatalf("* does not match %q", other)
		}
		if !pre.ActsFor(name) || pre.ActsFor(other) != (strings.HasPrefix(other, prefix) || other == "z") {
			t.Fatalf("%q* vs %q", prefix, other)
		}
	})
}

// Whatever a config holds, compiling it answers a policy or errors that
// are each a *ConfigError; it never panics.
func FuzzCompile(f *testing.F) {
	f.Add("agent-7", "0123456789abcdef", "team-*", "orchestrator", "w-*", "support")
	f.Add("", "", "", "", "", "")
	f.Add("a", "0123456789abcdef", "[", "admin", "*", "S*")
	f.Fuzz(func(t *testing.T, principal, token, recipient, role, registerFor, scope string) {
		config := func(token string) []Token {
			return []Token{{Principal: principal, Token: token, Grant: Grant{
				Recipients: []string{recipient}, Roles: []Role{Role(role)}, RegisterFor: []string{registerFor}, Scopes: []string{scope},
			}}}
		}
		p, err := Compile(config(token))
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("an error of another type: %v", err)
			}
			// The message is the same whatever the token's bytes: it
			// holds none of them.
			_, other := Compile(config(strings.Repeat("~", len(token))))
			if other == nil || other.Error() != err.Error() {
				t.Fatalf("the error depends on the token's bytes:\n%v\n%v", err, other)
			}
			return
		}
		pr, ok := p.Authenticate(token)
		if !ok || pr.Name != principal || !pr.ActsFor(recipient) {
			t.Fatalf("compiled, but %v %+v", ok, pr)
		}
	})
}

// What a kind's admission asks (kind.Caller) is answered by the rule of
// the route that shows the record: a Work item as GET /api/v1/work/{id}
// (SeeWork), a watch as GET /api/v1/watches/{id} (SeeWatch), a recipient
// as its record (Read), a scope as its Work list (ReadScope); a refusal
// is a *Denied naming what is missing; a class this build does not know
// is denied, and so is a missing principal.
func TestMayReadIsTheRuleOfTheRouteThatShowsTheRecord(t *testing.T) {
	p := policy(t)
	route := map[kind.ObjectClass]func(kind.Object) Action{
		kind.ObjectWork: func(o kind.Object) Action {
			return Action{Verb: SeeWork, Scope: o.Scope, Recipient: o.Recipient, ID: o.ID}
		},
		kind.ObjectWatch: func(o kind.Object) Action {
			return Action{Verb: SeeWatch, Recipient: o.Recipient, RegisteredBy: o.RegisteredBy, ID: o.ID}
		},
		kind.ObjectRecipient: func(o kind.Object) Action { return Action{Verb: Read, Recipient: o.Recipient} },
		kind.ObjectScope:     func(o kind.Object) Action { return Action{Verb: ReadScope, Scope: o.Scope} },
	}
	objects := []kind.Object{
		{Class: kind.ObjectWork, ID: "w", Scope: "support"},
		{Class: kind.ObjectWork, ID: "w", Scope: "billing"},
		{Class: kind.ObjectWork, ID: "w", Scope: "billing", Recipient: "agent-7"},
		{Class: kind.ObjectWork, ID: "w", Scope: "s-1", Recipient: "worker-1"},
		{Class: kind.ObjectWatch, ID: "x", Recipient: "agent-7"},
		{Class: kind.ObjectWatch, ID: "x", Recipient: "worker-1", RegisteredBy: "orch"},
		{Class: kind.ObjectWatch, ID: "x", Recipient: "lead"},
		{Class: kind.ObjectRecipient, Recipient: "agent-7"},
		{Class: kind.ObjectRecipient, Recipient: "team-a"},
		{Class: kind.ObjectScope, Scope: "support"},
		{Class: kind.ObjectScope, Scope: "s-2"},
	}
	for _, tok := range []string{tokAgent, tokOrch, tokOps, tokAdmin, tokTeam} {
		pr := principalOf(t, p, tok)
		for _, o := range objects {
			a := route[o.Class](o)
			err := pr.MayRead(o)
			var d *Denied
			switch {
			case pr.Allows(a) && err != nil:
				t.Errorf("%s may %+v, yet may not read %+v: %v", pr.Name, a, o, err)
			case !pr.Allows(a) && (!errors.As(err, &d) || d.Action != a):
				t.Errorf("%s may not %+v, yet reading %+v answers %v", pr.Name, a, o, err)
			}
		}
		if err := pr.MayRead(kind.Object{Class: 99}); err == nil && !pr.admin {
			t.Errorf("%s reads a record of a class this build does not know", pr.Name)
		}
	}
	for tok, o := range map[string]kind.Object{
		tokAgent: {Class: kind.ObjectWork, Scope: "support"},
		tokOps:   {Class: kind.ObjectWork, Scope: "anything"},
		tokTeam:  {Class: kind.ObjectWork, Scope: "elsewhere", Recipient: "team-b"},
	} {
		if err := principalOf(t, p, tok).MayRead(o); err != nil {
			t.Errorf("%s: %v", tok, err)
		}
	}
	for tok, o := range map[string]kind.Object{
		tokAgent: {Class: kind.ObjectWork, Scope: "billing"},
		tokOrch:  {Class: kind.ObjectWork, Scope: "support", Recipient: "worker-1"}, // registers for it, does not act for it
	} {
		if err := principalOf(t, p, tok).MayRead(o); err == nil {
			t.Errorf("%s reads %+v", tok, o)
		}
	}
	var nobody *Principal
	if err := nobody.MayRead(kind.Object{Class: kind.ObjectScope, Scope: "support"}); !errors.Is(err, kind.ErrNoCaller) {
		t.Errorf("no principal: %v", err)
	}
}
