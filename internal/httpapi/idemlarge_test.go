package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/store"
)

// TestKeyedClaimWithALargeAnswer: a Work claim under an Idempotency-Key
// whose answer (every input) is over what the store keeps under a key is
// made and answered in full, never 500; the same request again under the
// key is 422 idempotency_answer_unkept, as the document says, and claims
// nothing twice; the store kept the record's status and no body.
func TestKeyedClaimWithALargeAnswer(t *testing.T) {
	f, work := idemFixture(t)
	ctx := context.Background()
	id, err := store.ParseID(work)
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.st.GetWork(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// 64 more inputs of 16 KiB each: the claim's answer is over 1 MiB.
	text := strings.Repeat("y", 16<<10)
	var steps []store.RouteStep
	for i := range 64 {
		steps = append(steps, store.RouteStep{Cursor: "test-large", Seq: uint64(i + 1), ThreadKey: w.ThreadKey, OwnerKind: w.Kind,
			Input: store.WorkInput{EventSeq: uint64(1000 + i), Source: "slack-help", Item: "big", Thread: "T1", Text: text, RecordedAt: t0}})
	}
	if _, err := f.st.RouteBatch(ctx, steps); err != nil {
		t.Fatal(err)
	}

	path, body := "/api/v1/work/"+work+"/claim", `{"recipient":{"id":"agent-1"}}`
	first := keyed(t, f.app, "", "POST", path, body, api.HeaderIdempotencyKey, "large-claim")
	if first.status != http.StatusOK || len(first.body) <= f.st.MaxValue() {
		t.Fatalf("a keyed claim whose answer is large: %d, %d bytes, want 200 with every input (over %d bytes)", first.status, len(first.body), f.st.MaxValue())
	}
	rec, err := f.st.GetIdem(ctx, "local", "large-claim")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Answer.Status != http.StatusOK || len(rec.Answer.Body) != 0 || rec.Answer.Unkept != len(first.body) {
		t.Fatalf("the key's record: status %d, %d bytes kept, unkept %d; want 200, none kept, unkept %d", rec.Answer.Status, len(rec.Answer.Body), rec.Answer.Unkept, len(first.body))
	}

	again := keyed(t, f.app, "", "POST", path, body, api.HeaderIdempotencyKey, "large-claim")
	if again.status != http.StatusUnprocessableEntity || errCode(t, again) != api.CodeIdempotencyAnswerUnkept {
		t.Fatalf("the same claim again under its key: %d %s, want 422 %s", again.status, again.body, api.CodeIdempotencyAnswerUnkept)
	}
	doc, _ := openAPI(t)
	resp := &http.Response{StatusCode: again.status, Header: http.Header{"Content-Type": {"application/json"}}}
	if why := conforms(doc, openAPICompiler(t), "POST", path, resp, []byte(again.body)); why != "" {
		t.Fatal(why)
	}
	if w2, err := f.st.GetWork(ctx, id); err != nil || w2.ClaimedBy != "agent-1" || w2.Consumed != w2.Inputs {
		t.Fatalf("the Work after the repeat: %+v %v", w2, err)
	}
}
