package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/authztest"
	"github.com/vigilhq/vigil/store"
)

func TestListWatchesPagesAndFilters(t *testing.T) {
	f := newFixture(t)
	var ci []string
	for range 5 {
		status, b := f.do(t, "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`)
		var w api.Watch
		if err := json.Unmarshal(b, &w); status != 201 || err != nil {
			t.Fatalf("create: %d %s", status, b)
		}
		ci = append(ci, w.ID)
	}
	slices.Sort(ci) // one instant on the fixed clock: id order is the order
	if status, b := f.do(t, "PUT", "/api/v1/recipients/agent-2", `{"status":"running","refs":[{"kind":"ticket","params":{"n":1}},{"kind":"ticket","params":{"n":2}}]}`); status != 200 {
		t.Fatalf("put: %d %s", status, b)
	}
	list := func(q url.Values) api.WatchList {
		t.Helper()
		status, b := f.do(t, "GET", "/api/v1/watches?"+q.Encode(), "")
		var l api.WatchList
		if err := json.Unmarshal(b, &l); status != 200 || err != nil {
			t.Fatalf("%s: %d %s", q.Encode(), status, b)
		}
		return l
	}
	all := func(q url.Values) (ids []string, pages int) {
		t.Helper()
		for {
			l := list(q)
			pages++
			if n, _ := strconv.Atoi(q.Get("limit")); n > 0 && len(l.Watches) > n {
				t.Fatalf("page of %d over limit %d", len(l.Watches), n)
			}
			for _, w := range l.Watches {
				ids = append(ids, w.ID)
			}
			if l.Next == "" {
				return ids, pages
			}
			q.Set("after", l.Next)
		}
	}
	whole := list(url.Values{})
	if len(whole.Watches) != 7 || whole.Next != "" {
		t.Fatalf("one default page: %d watches, next %q", len(whole.Watches), whole.Next)
	}
	var wholeIDs []string
	for _, w := range whole.Watches {
		wholeIDs = append(wholeIDs, w.ID)
	}
	if got, pages := all(url.Values{"limit": {"2"}}); !slices.Equal(got, wholeIDs) || pages != 4 {
		t.Fatalf("pages of 2: %v in %d pages, want %v", got, pages, wholeIDs)
	}
	if got, _ := all(url.Values{"limit": {"3"}, "kind": {"ci"}}); !slices.Equal(got, ci) {
		t.Fatalf("kind ci: %v, want %v", got, ci)
	}
	if got, _ := all(url.Values{"limit": {"1"}, "kind": {"ticket"}, "state": {"pending"}}); len(got) != 2 {
		t.Fatalf("kind ticket: %v", got)
	}
	if got, _ := all(url.Values{"kind": {"ticket"}, "recipient": {"agent-1"}}); len(got) != 0 {
		t.Fatalf("ticket of agent-1: %v", got)
	}
	if got, _ := all(url.Values{"state": {"fired"}}); len(got) != 0 {
		t.Fatalf("fired: %v", got)
	}
	if got, _ := all(url.Values{"recipient": {"agent-1"}, "state": {"pending"}, "limit": {"4"}}); !slices.Equal(got, ci) {
		t.Fatalf("agent-1 pending: %v", got)
	}
}

func TestListWatchesRefusesBadQueries(t *testing.T) {
	f := newFixture(t)
	short := base64.RawURLEncoding.EncodeToString([]byte{cursorVersion, 1, 2, 3})
	other := base64.RawURLEncoding.EncodeToString(append([]byte{9}, make([]byte, 16)...))
	for _, tt := range []struct{ query, field string }{
		{"limit=0", "limit"}, {"limit=1001", "limit"}, {"limit=-1", "limit"}, {"limit=ten", "limit"}, {"limit=1e3", "limit"},
		{"after=not-a-cursor!", "after"}, {"after=" + short, "after"}, {"after=" + other, "after"}, {"after=" + newCursorCodec().encode(store.ID{1}), "after"},
		{"kind=Timer", "kind"}, {"kind=a%20b", "kind"},
		{"state=done", "state"}, {"state=PENDING", "state"},
		{"recipient=a%2Fb", "recipient"},
	} {
		status, b := f.do(t, "GET", "/api/v1/watches?"+tt.query, "")
		var env api.ErrorEnvelope
		if err := json.Unmarshal(b, &env); err != nil || status != 422 || env.Error.Field != tt.field || env.Error.Code == "" {
			t.Errorf("%s: %d %s, want 422 naming %s", tt.query, status, b, tt.field)
		}
	}
}

// Every cursor the server writes reads back as the id it was written
// from; any other string is refused as a client's mistake, never a panic
// or a 5xx.
func TestCursorRoundTrips(t *testing.T) {
	codec := newCursorCodec()
	rapid.Check(t, func(t *rapid.T) {
		var id store.ID
		copy(id[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "id"))
		if id == (store.ID{}) {
			id[15] = 1
		}
		got, err := codec.decode(codec.encode(id))
		if err != nil || got != id {
			t.Fatalf("%x: %x %v", id, got, err)
		}
	})
}

func FuzzDecodeCursor(f *testing.F) {
	var id store.ID
	id[0] = 1
	codec := newCursorCodec()
	f.Add(codec.encode(id))
	f.Add("")
	f.Add("AQ")
	f.Add("AQAAAAAAAAAAAAAAAAAAAAA=")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := codec.decode(s)
		if err != nil {
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Code != api.CodeInvalidField || ae.Field != "after" || api.Status(ae.Code) >= 500 {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if s != "" && codec.encode(got) != s {
			t.Fatalf("%q decodes to %x, which encodes as %q", s, got, codec.encode(got))
		}
	})
}

// parseLimit takes exactly the decimal integers 1 to 1000 and the empty
// default; everything else is a 422 naming limit.
func TestParseLimit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.Map(rapid.IntRange(-5000, 5000), strconv.Itoa)).Draw(t, "limit")
		n, err := parseLimit(s)
		want, aerr := strconv.Atoi(s)
		switch {
		case s == "":
			if err != nil || n != defaultLimit {
				t.Fatalf("default: %d %v", n, err)
			}
		case aerr == nil && want >= 1 && want <= maxLimit:
			if err != nil || n != want {
				t.Fatalf("%q: %d %v", s, n, err)
			}
		default:
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Field != "limit" || api.Status(ae.Code) != 422 {
				t.Fatalf("%q: %d %v", s, n, err)
			}
		}
	})

}

// A cursor is sealed: it holds no readable id (a page can end on a row
// the principal may not see), and one server's cursor is refused by
// another (a restart draws new keys).
func TestCursorIsSealed(t *testing.T) {
	a, b := newCursorCodec(), newCursorCodec()
	id := store.ID{0x01, 0x93, 0x2a, 0x10, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xf0, 0x0f}
	s := a.encode(id)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || bytes.Contains(raw, id[:6]) || bytes.Contains(raw, id[6:]) {
		t.Fatalf("the cursor %q shows the id (%v)", s, err)
	}
	if got, err := a.decode(s); err != nil || got != id {
		t.Fatalf("its own server: %x %v", got, err)
	}
	if _, err := b.decode(s); err == nil {
		t.Fatal("another server's keys opened it")
	}
}

// heldWatches is a Watches whose every page steps over held rows.
type heldWatches struct{ held int }

func (heldWatches) Get(context.Context, store.ID) (store.Watch, error) {
	return store.Watch{}, store.ErrNotFound
}

func (h heldWatches) ListPage(context.Context, store.Query) (store.Page, error) {
	return store.Page{HeldAside: h.held}, nil
}

// A held row can be attributed only by its recipient's index: a listing
// filtered by recipient counts the rows held aside, and so does an
// operator's; any other principal's count would speak of rows it may not
// see, so it is left out.
func TestHeldAsideOnlyWhereItCanBeAttributed(t *testing.T) {
	const token = "token-of-agent-1-000000"
	for _, tt := range []struct {
		name  string
		roles []authz.Role
		query string
		want  int
	}{
		{"own recipient", nil, "?recipient=agent-1", 2},
		{"unfiltered", nil, "", 0},
		{"registered by itself", nil, "?registered_by=agent-1", 0},
		{"operator, unfiltered", []authz.Role{authz.Operator}, "", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			app := New(Deps{Watches: heldWatches{held: 2}}, Options{Auth: authztest.Guard(t, map[string]string{token: "agent-1"}, tt.roles...)})
			resp, b := call(t, app, token, "GET", "/api/v1/watches"+tt.query, "")
			var l api.WatchList
			if err := json.Unmarshal(b, &l); resp.StatusCode != 200 || err != nil || l.HeldAside != tt.want {
				t.Fatalf("%d %+v %v, want held_aside %d", resp.StatusCode, l, err, tt.want)
			}
		})
	}
}
