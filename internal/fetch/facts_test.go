package fetch

import (
	"testing"

	"github.com/vigilhq/vigil/internal/httpapi"
)

// The issuer is what the API's dead-letter route reads.
var _ httpapi.DeadLetters = (*Issuer)(nil)

func TestDeadLettersPaging(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := t.Context()
	for range 5 {
		h.Fetch(ctx, get("ftp://x/"))
	}
	first, err := h.DeadLetters(ctx, 0, 2)
	if err != nil || len(first) != 2 || first[0].Seq != 1 || first[1].Seq != 2 {
		t.Fatalf("first page %+v, %v", first, err)
	}
	rest, err := h.DeadLetters(ctx, first[1].Seq, 0)
	if err != nil || len(rest) != 3 || rest[0].Seq != 3 || rest[0].URL != "ftp://x/" || rest[0].HeaderNames == nil {
		t.Fatalf("rest %+v, %v", rest, err)
	}
	none, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if dls, err := none.DeadLetters(ctx, 0, 10); err != nil || dls != nil {
		t.Fatalf("no event log: %v, %v", dls, err)
	}
}
