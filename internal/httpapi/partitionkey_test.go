package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/store"
)

// Through the API, the http plugin built from its source and the
// scheduler: two watches on one URL, however it is written, get ids in
// one slot (so one partition of any cluster), and a watch on another URL
// another slot.
func TestWatchesOnOneURLShareASlot(t *testing.T) {
	f := sourceFixture(t)
	slot := func(url string) uint16 {
		t.Helper()
		status, b := f.do(t, "POST", "/api/v1/watches", `{"kind":"http","params":{"url":"`+url+`"},"recipient":{"id":"agent-1"}}`)
		var w api.Watch
		if err := json.Unmarshal(b, &w); status != 201 || err != nil {
			t.Fatalf("%s: %d %s", url, status, b)
		}
		id, err := store.ParseID(w.ID)
		if err != nil {
			t.Fatal(err)
		}
		return id.Slot()
	}
	a := slot("https://status.example.com/health")
	if a != store.SlotOf("https://status.example.com/health") {
		t.Fatalf("slot %d, want the URL's", a)
	}
	if b := slot("https://Status.Example.com:443/health#top"); b != a {
		t.Fatalf("one URL in slots %d and %d", a, b)
	}
	if c := slot("https://status.example.com/ready"); c == a {
		t.Fatalf("two URLs share slot %d", a)
	}
}
