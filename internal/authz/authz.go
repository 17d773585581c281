package authz

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// Role is a right beyond acting for recipients.
type Role string

// The roles.
const (
	// Orchestrator registers watches for the recipients RegisterFor
	// matches (every one when it is empty).
	Orchestrator Role = "orchestrator"
	// Operator reads across recipients and scopes, and the metrics.
	Operator Role = "operator"
	// Admin may do everything.
	Admin Role = "admin"
)

// Roles is every role, in the order the docs list them.
var roles = []Role{Orchestrator, Operator, Admin}

// Grant is what one token's principal may do, as configured.
type Grant struct {
	// Recipients the principal acts for beside the one named like it,
	// which it always acts for: names and *-patterns.
	Recipients []string
	// RegisterFor narrows the orchestrator role to the recipients these
	// patterns match. It needs the role.
	RegisterFor []string
	// Scopes whose Work the principal may list, read, claim and
	// complete: names and *-patterns.
	Scopes []string
	Roles  []Role
}

// Token is one configured bearer token.
type Token struct {
	Principal string
	Token     string
	Grant     Grant
}

// MinTokenLen is the shortest token a Policy accepts.
const MinTokenLen = 16

// ConfigError names the token entry and field at fault:
// "tokens[2].roles[0]".
type ConfigError struct {
	Path string
	Err  error
}

func (e *ConfigError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Policy is a compiled set of tokens. It is immutable.
type Policy struct {
	local  *Principal // set when there are no tokens
	tokens map[[sha256.Size]byte]*Principal
}

// Local is the policy of a server without tokens: every request is the
// local principal, which may do everything.
func Local() *Policy {
	return &Policy{local: newPrincipal(Principal{Name: kind.LocalPrincipal, actFor: []string{"*"}, admin: true, operator: true, orchestrator: true})}
}

// Compile checks every token and grant, returning every problem (each a
// *ConfigError naming its entry), and builds the policy. No tokens at all
// is an error: that server has the Local policy.
func Compile(tokens []Token) (*Policy, error) {
	if len(tokens) == 0 {
		return nil, errors.New("no tokens: a server without tokens has the local policy")
	}
	p := &Policy{tokens: make(map[[sha256.Size]byte]*Principal, len(tokens))}
	var errs []error
	bad := func(path string, err error) { errs = append(errs, &ConfigError{Path: path, Err: err}) }
	for i, t := range tokens {
		at := fmt.Sprintf("tokens[%d]", i)
		switch {
		case !store.ValidRecipientID(t.Principal):
			bad(at+".principal", fmt.Errorf("%q: %s", t.Principal, store.RecipientIDGrammar))
		case t.Principal == kind.LocalPrincipal:
			// The tokenless principal: rows it registered, and the
			// workspace rule, mean it and no token's principal.
			bad(at+".principal", fmt.Errorf("%q is the principal of a server without tokens; name this one otherwise", t.Principal))
		}
		if len(t.Token) < MinTokenLen {
			bad(at+".token", fmt.Errorf("principal %s: a token needs at least %d characters", t.Principal, MinTokenLen))
		}
		sum := sha256.Sum256([]byte(t.Token))
		if _, dup := p.tokens[sum]; dup {
			bad(at+".token", fmt.Errorf("principal %s: the same token is given twice", t.Principal))
		}
		pr, err := compileGrant(at, t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.tokens[sum] = pr
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

func compileGrant(at string, t Token) (*Principal, error) {
	g := t.Grant
	var errs []error
	bad := func(path string, err error) { errs = append(errs, &ConfigError{Path: at + "." + path, Err: err}) }
	pr := newPrincipal(Principal{Name: t.Principal})
	for i, r := range g.Roles {
		switch r {
		case Orchestrator:
			pr.orchestrator = true
		case Operator:
			pr.operator = true
		case Admin:
			pr.admin, pr.operator, pr.orchestrator = true, true, true
		default:
			bad(fmt.Sprintf("roles[%d]", i), fmt.Errorf("%q: want one of %v", r, roles))
		}
	}
	for i, pat := range g.Recipients {
		if !validPattern(pat, store.ValidRecipientID) {
			bad(fmt.Sprintf("recipients[%d]", i), fmt.Errorf("%q: want a recipient id or a pattern of one with * (%s)", pat, store.RecipientIDGrammar))
		}
	}
	if len(g.RegisterFor) > 0 && !slices.Contains(g.Roles, Orchestrator) && !slices.Contains(g.Roles, Admin) {
		bad("register_for", errors.New("narrows the orchestrator role, which this token does not have (add roles: [orchestrator])"))
	}
	for i, pat := range g.RegisterFor {
		if !validPattern(pat, store.ValidRecipientID) {
			bad(fmt.Sprintf("register_for[%d]", i), fmt.Errorf("%q: want a recipient id or a pattern of one with * (%s)", pat, store.RecipientIDGrammar))
		}
	}
	for i, pat := range g.Scopes {
		if !validPattern(pat, abi.ValidKind) {
			bad(fmt.Sprintf("scopes[%d]", i), fmt.Errorf("%q: want a scope name or a pattern of one with * (1-64 of a-z 0-9 . _ -)", pat))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// A principal always acts for the recipient of its own name: its
	// record holds the workspace its command watches run in.
	pr.actFor = append([]string{t.Principal}, g.Recipients...)
	pr.registerFor = slices.Clone(g.RegisterFor)
	if pr.orchestrator && len(pr.registerFor) == 0 {
		pr.registerFor = []string{"*"}
	}
	pr.scopes = slices.Clone(g.Scopes)
	pr.fingerprint = fmt.Sprintf("%s|%v|%v|%v|%t%t%t", pr.Name, pr.actFor, pr.registerFor, pr.scopes, pr.orchestrator, pr.operator, pr.admin)
	return pr, nil
}

// validPattern reports whether pat is a name valid accepts, with * in
// place of any runs of its characters.
func validPattern(pat string, valid func(string) bool) bool {
	return valid(strings.ReplaceAll(pat, "*", "x"))
}

// Open reports whether the policy is the tokenless local one.
func (p *Policy) Open() bool { return p.local != nil }

// Authenticate finds the principal of a bearer token. The lookup is by
// the token's SHA-256, so its time says nothing about how close a guess
// was. Under the Local policy every request is the local principal.
func (p *Policy) Authenticate(bearer string) (*Principal, bool) {
	if p.local != nil {
		return p.local, true
	}
	if bearer == "" {
		return nil, false
	}
	pr, ok := p.tokens[sha256.Sum256([]byte(bearer))]
	return pr, ok
}

// Principals counts the configured principals' tokens.
func (p *Policy) Principals() int { return len(p.tokens) }

// Principal is an authenticated principal and what its grant allows.
type Principal struct {
	// Name is never empty (Compile checks it, Local's is kind.LocalPrincipal), so a
	// row no principal registered (RegisteredBy "") is nobody's.
	Name                          string
	actFor, registerFor, scopes   []string
	orchestrator, operator, admin bool
	fingerprint                   string
	// revoked ends when the token is revoked.
	revoked context.Context
	revoke  context.CancelFunc
}

func newPrincipal(p Principal) *Principal {
	p.revoked, p.revoke = context.WithCancel(context.Background())
	return &p
}

// Revocation is a context that ends when the principal's token is revoked
// (a reload removed it or changed its grant): whatever the principal
// holds open must end with it.
func (p *Principal) Revocation() context.Context { return p.revoked }

// Revoked reports whether the token was revoked.
func (p *Principal) Revoked() bool { return p.revoked.Err() != nil }

// Operator reports whether the principal reads across recipients.
func (p *Principal) Operator() bool { return p.operator }

func matchAny(patterns []string, name string) bool {
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, name); ok {
			return true
		}
	}
	return false
}

// ActsFor reports whether the principal acts for recipient.
func (p *Principal) ActsFor(recipient string) bool {
	return p.admin || matchAny(p.actFor, recipient)
}

// ActsAs reports whether the principal's grant names recipient, so that
// what it says of the recipient (its phase) is the recipient's own word.
// The admin role acts for every recipient but as none of them.
func (p *Principal) ActsAs(recipient string) bool { return matchAny(p.actFor, recipient) }

// Verb is what an Action does.
type Verb int

// The verbs.
const (
	// ActFor changes what a recipient owns: its record and lifecycle,
	// its Work claims. Recipient.
	ActFor Verb = iota + 1
	// Read reads a recipient's record, mailbox and watches. Recipient.
	Read
	// Register registers a watch for a recipient. Recipient.
	Register
	// SeeWatch reads one watch. Recipient, RegisteredBy.
	SeeWatch
	// ChangeWatch cancels one watch. Recipient, RegisteredBy, ID.
	ChangeWatch
	// ListRegistered lists the watches RegisteredBy registered.
	ListRegistered
	// ReadScope lists and reads a scope's Work. Scope.
	ReadScope
	// WorkScope claims or completes a scope's unclaimed Work. Scope.
	WorkScope
	// SeeWork reads one Work item. Scope, Recipient (its claimer, if any).
	SeeWork
	// Operate reads the host's metrics.
	Operate
	// Administer does what What says: reload plugins, read the dead
	// letters.
	Administer
)

// Action is one thing a request would do.
type Action struct {
	Verb         Verb
	Recipient    string
	RegisteredBy string
	Scope        string
	// ID names the watch or Work item, for the refusal's message.
	ID string
	// What says what Administer would do ("reload the plugins").
	What string
}

// Allows reports whether the principal may do a.
func (p *Principal) Allows(a Action) bool {
	if p.admin {
		return true
	}
	switch a.Verb {
	case ActFor:
		return p.ActsFor(a.Recipient)
	case Read:
		return p.operator || p.ActsFor(a.Recipient)
	case Register:
		return p.ActsFor(a.Recipient) || p.orchestrator && matchAny(p.registerFor, a.Recipient)
	case SeeWatch:
		return p.operator || p.ActsFor(a.Recipient) || a.RegisteredBy == p.Name
	case ChangeWatch:
		return p.ActsFor(a.Recipient) || a.RegisteredBy == p.Name
	case ListRegistered:
		return p.operator || a.RegisteredBy == p.Name
	case ReadScope:
		return p.operator || matchAny(p.scopes, a.Scope)
	case WorkScope:
		return matchAny(p.scopes, a.Scope)
	case SeeWork:
		return p.operator || matchAny(p.scopes, a.Scope) || a.Recipient != "" && p.ActsFor(a.Recipient)
	case Operate:
		return p.operator
	}
	return false // Administer, and any verb this build does not know
}

// Check is Allows as an error: nil, or a *Denied naming what is missing.
func (p *Principal) Check(a Action) error {
	if p.Allows(a) {
		return nil
	}
	return &Denied{Principal: p.Name, Action: a}
}

// MayRead implements kind.Caller: whether the principal may read what a
// watch's params name, by the rule of the route that shows the record (a
// Work item: SeeWork, as GET /api/v1/work/{id}; a watch: SeeWatch; a
// recipient: Read; a scope: ReadScope). Nil, or a *Denied naming what is
// missing; an unknown class is denied.
func (p *Principal) MayRead(o kind.Object) error {
	if p == nil {
		return kind.ErrNoCaller
	}
	var a Action
	switch o.Class {
	case kind.ObjectWork:
		a = Action{Verb: SeeWork, Scope: o.Scope, Recipient: o.Recipient, ID: o.ID}
	case kind.ObjectWatch:
		a = Action{Verb: SeeWatch, Recipient: o.Recipient, RegisteredBy: o.RegisteredBy, ID: o.ID}
	case kind.ObjectRecipient:
		a = Action{Verb: Read, Recipient: o.Recipient}
	case kind.ObjectScope:
		a = Action{Verb: ReadScope, Scope: o.Scope}
	default:
		return &Denied{Principal: p.Name}
	}
	return p.Check(a)
}

var _ kind.Caller = (*Principal)(nil)

// Denied is a refused action.
type Denied struct {
	Principal string
	Action    Action
}

func (d *Denied) Error() string {
	a, who := d.Action, "principal "+d.Principal
	switch a.Verb {
	case ActFor:
		return fmt.Sprintf("%s may not act for recipient %s (grant: recipients)", who, a.Recipient)
	case Read:
		return fmt.Sprintf("%s may not read recipient %s (grant: recipients, or the operator role)", who, a.Recipient)
	case Register:
		return fmt.Sprintf("%s may not register watches for recipient %s (grant: recipients, or the orchestrator role and register_for)", who, a.Recipient)
	case SeeWatch:
		return fmt.Sprintf("%s may not see watch %s of recipient %s", who, a.ID, a.Recipient)
	case ChangeWatch:
		return fmt.Sprintf("%s may not cancel watch %s of recipient %s (grant: recipients, or having registered it, or the admin role)", who, a.ID, a.Recipient)
	case ListRegistered:
		return fmt.Sprintf("%s may not list the watches principal %s registered (the operator role)", who, a.RegisteredBy)
	case ReadScope:
		return fmt.Sprintf("%s may not read the Work of scope %s (grant: scopes, or the operator role)", who, a.Scope)
	case WorkScope:
		return fmt.Sprintf("%s may not claim or complete the Work of scope %s (grant: scopes)", who, a.Scope)
	case SeeWork:
		return fmt.Sprintf("%s may not see Work %s of scope %s", who, a.ID, a.Scope)
	case Operate:
		return fmt.Sprintf("%s may not read the host's metrics (the operator role)", who)
	case Administer:
		return fmt.Sprintf("%s may not %s (the admin role)", who, a.What)
	}
	return who + " may not do this"
}
