package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// Thread is the built-in kind observe.thread: a wait for the next new item
// of an observed thread's Work. It registers in the host's kind registry
// beside the plugins (Register), and is woken by Poke rather than probed.
type Thread struct {
	ob *Observer
}

var (
	_ kind.Kind    = (*Thread)(nil)
	_ kind.Settler = (*Thread)(nil)
)

// Thread is the observer's observe.thread kind.
func (ob *Observer) Thread() *Thread { return &Thread{ob: ob} }

// Register adds the observer's kind to reg.
func (ob *Observer) Register(reg *kind.Registry) error {
	return reg.Register(kind.HostSource, ob.Thread())
}

// ThreadParams are an observe.thread watch's params. After is the last
// input the watch's recipient has been given; left out, it is that
// recipient's consumed input at registration (store.Work.ConsumedBy), and
// the stored row carries the number.
type ThreadParams struct {
	WorkID string `json:"work_id"`
	After  *int   `json:"after,omitempty"`
}

// ThreadItem is one new input as a wake carries it.
type ThreadItem struct {
	N          int       `json:"n"`
	Source     string    `json:"source"`
	Item       string    `json:"item"`
	Revision   string    `json:"revision,omitempty"`
	Thread     string    `json:"thread"`
	Text       string    `json:"text"`
	RecordedAt time.Time `json:"recorded_at"`
}

// ThreadDetail is a fired observe.thread watch's outcome detail. Last
// is the last item it carries; More says newer items follow it, which
// the recipient's next wait carries at once (a wake carries at most
// MaxWakeItems items, within store.MaxOutcome).
type ThreadDetail struct {
	WorkID string       `json:"work_id"`
	Title  string       `json:"title"`
	Items  []ThreadItem `json:"items"`
	Last   int          `json:"last"`
	More   bool         `json:"more,omitempty"`
}

// MaxWakeItems bounds the items one wake carries; with the store's bound
// on an outcome (store.MaxOutcome, which the items' bytes keep within),
// a wake of a long thread is mailed a part at a time, each moving its
// recipient's input over what it carried alone.
const MaxWakeItems = 100

const threadSchema = `{"type":"object","additionalProperties":false,"required":["work_id"],"properties":{` +
	`"work_id":{"type":"string","description":"the Work to wait on"},` +
	`"after":{"type":"integer","minimum":0,"description":"the last input already seen (default: the last one given to the watch's recipient, by its claim or its previous wakes)"}}}`

// Info implements kind.Kind.
func (k *Thread) Info() kind.Info {
	return kind.Info{
		Kind: WorkKind, File: "(built in)", Version: "1.0.0", Pushed: true, Source: "pushed", Observable: true,
		Summary:      "Wait for the next new item of an observed thread's Work",
		Capabilities: []string{}, Schema: json.RawMessage(threadSchema),
	}
}

// NoWork is the refusal of a Work id nothing answers to, as GET
// /api/v1/work/{id} and the thread kind's admission both give it: for an
// id that is unknown and for one the caller may not read alike, so
// neither tells whether the Work exists.
func NoWork(id string) *api.Error {
	return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no work item %q", id)}
}

// Admit implements kind.Kind: the Work must exist, be one req's caller
// may read (the rule of GET /api/v1/work/{id}: its scope, acting for its
// claimer, or the operator role), and be open; the params are completed
// with After, the recipient's consumed input when left out. A Work the
// caller may not read is refused exactly as an unknown id, before
// anything else about it is told.
func (k *Thread) Admit(ctx context.Context, req kind.AdmitRequest) (kind.Admission, error) {
	var p ThreadParams
	if err := abi.StrictUnmarshal(req.Params, &p); err != nil {
		return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: "params", Message: err.Error()}
	}
	id, err := store.ParseID(p.WorkID)
	if err != nil {
		return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: "params.work_id", Message: "want a work id"}
	}
	w, err := k.ob.o.Store.GetWork(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return kind.Admission{}, NoWork(p.WorkID)
	case err != nil:
		return kind.Admission{}, err
	}
	if err := kind.MayRead(req.Caller, kind.Object{Class: kind.ObjectWork, ID: w.ID.String(), Scope: w.Scope, Recipient: w.ClaimedBy}); err != nil {
		return kind.Admission{}, &kind.HiddenError{NotFound: NoWork(p.WorkID), Reason: err}
	}
	switch {
	case w.Kind != WorkKind:
		return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: "params.work_id", Message: fmt.Sprintf("work %s is a %s, not an %s", p.WorkID, w.Kind, WorkKind)}
	case w.State != store.WorkOpen:
		return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: "params.work_id", Message: fmt.Sprintf("work %s is %s: its thread starts nothing more", p.WorkID, w.State)}
	}
	after := w.ConsumedBy(req.Recipient)
	if p.After != nil {
		if *p.After < 0 || *p.After > w.Inputs {
			return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: "params.after", Message: fmt.Sprintf("want 0 to %d, the work's inputs", w.Inputs)}
		}
		after = *p.After
	}
	p.WorkID = w.ID.String()
	p.After = &after
	completed, err := json.Marshal(p)
	if err != nil {
		return kind.Admission{}, err
	}
	return kind.Admission{Subject: Subject(w.ID), Params: completed}, nil
}

// Observe implements kind.Kind. It is called at registration and when the
// Work's subject is poked: settled with the inputs after After (as many
// as one wake carries, wake), settled "completed" when the Work
// completed with none, pending otherwise.
func (k *Thread) Observe(ctx context.Context, req abi.ObserveRequest) (kind.Observation, error) {
	var p ThreadParams
	if err := json.Unmarshal(req.Params, &p); err != nil || p.After == nil {
		return kind.Observation{}, fmt.Errorf("observe.thread: stored params %s: not as admitted", req.Params)
	}
	id, err := store.ParseID(p.WorkID)
	if err != nil {
		return kind.Observation{}, fmt.Errorf("observe.thread: work id: %w", err)
	}
	w, err := k.ob.o.Store.GetWork(ctx, id)
	if err != nil {
		return kind.Observation{Status: abi.StatusPending, Note: "reading the work: " + err.Error()}, nil
	}
	inputs, err := k.ob.o.Store.WorkInputs(ctx, id, *p.After)
	if err != nil {
		return kind.Observation{Status: abi.StatusPending, Note: "reading the work's inputs: " + err.Error()}, nil
	}
	if len(inputs) == 0 {
		if w.State == store.WorkCompleted {
			return kind.Observation{Status: abi.StatusSettled, Outcome: &abi.Outcome{Result: "completed", Summary: "the work was completed; its thread starts nothing more"}}, nil
		}
		return kind.Observation{Status: abi.StatusPending, Note: "no new item"}, nil
	}
	return wake(w, inputs)
}

// wake is the outcome of a wake carrying inputs, the oldest first: as
// many as fit MaxWakeItems and store.MaxOutcome (at least one), More set
// when some are left for the next wait.
func wake(w store.Work, inputs []store.WorkInput) (kind.Observation, error) {
	d := ThreadDetail{WorkID: w.ID.String(), Title: w.Title, Items: make([]ThreadItem, 0, min(len(inputs), MaxWakeItems))}
	empty, err := json.Marshal(d)
	if err != nil {
		return kind.Observation{}, err
	}
	// What the outcome holds besides its items: the result, the summary
	// (the title quoted, at most 4 bytes a byte, and the counts) and the
	// detail's own fields, "more" among them.
	size := len("new_items") + 4*len(w.Title) + 96 + len(empty) + 32
	for _, in := range inputs {
		it := ThreadItem{N: in.N, Source: in.Source, Item: in.Item, Revision: in.Revision, Thread: in.Thread, Text: in.Text, RecordedAt: in.RecordedAt}
		b, err := json.Marshal(it)
		if err != nil {
			return kind.Observation{}, err
		}
		if len(d.Items) > 0 && (len(d.Items) == MaxWakeItems || size+len(b)+1 > store.MaxOutcome) {
			d.More = true
			break
		}
		d.Items = append(d.Items, it)
		d.Last = in.N
		size += len(b) + 1
	}
	detail, err := json.Marshal(d)
	if err != nil {
		return kind.Observation{}, err
	}
	summary := fmt.Sprintf("%d new item(s) in %q", len(d.Items), w.Title)
	if d.More {
		summary += fmt.Sprintf("; more follow item %d: wait again for them", d.Last)
	}
	return kind.Observation{Status: abi.StatusSettled, Outcome: &abi.Outcome{Result: "new_items", Summary: summary, Detail: detail}}, nil
}

// Settled implements kind.Settler: once a wake is persisted, the watch's
// recipient has been given its items, and that recipient's consumed input
// moves (the claimer's Consumed, or the recipient's own cursor), never
// another's. A crash before this leaves them unconsumed, so the
// recipient's next wait carries them again: a repeat is cheaper than a
// loss.
func (k *Thread) Settled(ctx context.Context, w store.Watch) {
	if w.Kind != WorkKind || w.State != store.Fired || w.Outcome == nil || w.Outcome.Result != "new_items" {
		return
	}
	var d ThreadDetail
	if err := json.Unmarshal(w.Outcome.Detail, &d); err != nil {
		return
	}
	id, err := store.ParseID(d.WorkID)
	if err != nil {
		return
	}
	if _, err := k.ob.o.Store.ConsumeWork(ctx, id, w.Recipient.ID, d.Last); err != nil {
		k.ob.log.Error("recording a work's consumed input", "work", d.WorkID, "err", err)
	}
}
