package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vigilhq/vigil/api/abi"
	"github.com/vigilhq/vigil/host/plugin"
	"github.com/vigilhq/vigil/store"
)

// Plugins is the plugin runtime as the scheduler sees it.
type Plugins interface {
	Lookup(kind string) (plugin.Info, bool)
	Admit(ctx context.Context, kind string, params json.RawMessage) (plugin.Admission, error)
	Observe(ctx context.Context, req abi.ObserveRequest) (plugin.Observation, error)
}

// Kinds serves the built-in kind observe.thread and hands every other
// kind to the plugin runtime. The scheduler takes it as its Plugins.
type Kinds struct {
	Plugins
	ob *Observer
}

// Kinds wraps p with the built-in observe.thread kind.
func (ob *Observer) Kinds(p Plugins) *Kinds { return &Kinds{Plugins: p, ob: ob} }

// ThreadParams are an observe.thread watch's params. After is the last
// input the agent has been given; left out, it is the Work's Consumed at
// registration, and the stored row carries the number.
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

// ThreadDetail is a fired observe.thread watch's outcome detail.
type ThreadDetail struct {
	WorkID string       `json:"work_id"`
	Title  string       `json:"title"`
	Items  []ThreadItem `json:"items"`
	Last   int          `json:"last"`
}

const threadSchema = `{"type":"object","additionalProperties":false,"required":["work_id"],"properties":{` +
	`"work_id":{"type":"string","description":"the Work to wait on"},` +
	`"after":{"type":"integer","minimum":0,"description":"the last input already seen (default: the Work's consumed input)"}}}`

// Lookup implements the scheduler's Plugins.
func (k *Kinds) Lookup(kind string) (plugin.Info, bool) {
	if kind != WorkKind {
		return k.Plugins.Lookup(kind)
	}
	return plugin.Info{
		Kind: WorkKind, File: "(built in)", Version: "1.0.0", Pushed: true, Observable: true,
		Summary:      "Wait for the next new item of an observed thread's Work",
		Capabilities: []string{}, Schema: json.RawMessage(threadSchema),
	}, true
}

// Admit implements the scheduler's Plugins: the Work must exist and be
// open; the params are completed with After.
func (k *Kinds) Admit(ctx context.Context, kind string, params json.RawMessage) (plugin.Admission, error) {
	if kind != WorkKind {
		return k.Plugins.Admit(ctx, kind, params)
	}
	var p ThreadParams
	if err := abi.StrictUnmarshal(params, &p); err != nil {
		return plugin.Admission{}, &plugin.Refusal{Code: plugin.CodeInvalidParams, Field: "params", Message: err.Error()}
	}
	id, err := store.ParseID(p.WorkID)
	if err != nil {
		return plugin.Admission{}, &plugin.Refusal{Code: plugin.CodeInvalidParams, Field: "params.work_id", Message: "want a work id"}
	}
	w, err := k.ob.o.Store.GetWork(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return plugin.Admission{}, &plugin.Refusal{Code: plugin.CodeInvalidParams, Field: "params.work_id", Message: "no work item " + p.WorkID}
	case err != nil:
		return plugin.Admission{}, err
	case w.Kind != WorkKind:
		return plugin.Admission{}, &plugin.Refusal{Code: plugin.CodeInvalidParams, Field: "params.work_id", Message: fmt.Sprintf("work %s is a %s, not an %s", p.WorkID, w.Kind, WorkKind)}
	case w.State != store.WorkOpen:
		return plugin.Admission{}, &plugin.Refusal{Code: plugin.CodeInvalidParams, Field: "params.work_id", Message: fmt.Sprintf("work %s is %s: its thread starts nothing more", p.WorkID, w.State)}
	}
	after := w.Consumed
	if p.After != nil {
		if *p.After < 0 || *p.After > w.Inputs {
			return plugin.Admission{}, &plugin.Refusal{Code: plugin.CodeInvalidParams, Field: "params.after", Message: fmt.Sprintf("want 0 to %d, the work's inputs", w.Inputs)}
		}
		after = *p.After
	}
	p.WorkID = w.ID.String()
	p.After = &after
	completed, err := json.Marshal(p)
	if err != nil {
		return plugin.Admission{}, err
	}
	return plugin.Admission{Subject: Subject(w.ID), Params: completed}, nil
}

// Observe implements the scheduler's Plugins. It is called at
// registration and when the Work's subject is poked: settled with the
// inputs after After, settled "completed" when the Work completed with
// none, pending otherwise.
func (k *Kinds) Observe(ctx context.Context, req abi.ObserveRequest) (plugin.Observation, error) {
	if req.Kind != WorkKind {
		return k.Plugins.Observe(ctx, req)
	}
	var p ThreadParams
	if err := json.Unmarshal(req.Params, &p); err != nil || p.After == nil {
		return plugin.Observation{}, fmt.Errorf("observe.thread: stored params %s: not as admitted", req.Params)
	}
	id, err := store.ParseID(p.WorkID)
	if err != nil {
		return plugin.Observation{}, fmt.Errorf("observe.thread: work id: %w", err)
	}
	w, err := k.ob.o.Store.GetWork(ctx, id)
	if err != nil {
		return plugin.Observation{Status: abi.StatusPending, Note: "reading the work: " + err.Error()}, nil
	}
	inputs, err := k.ob.o.Store.WorkInputs(ctx, id, *p.After)
	if err != nil {
		return plugin.Observation{Status: abi.StatusPending, Note: "reading the work's inputs: " + err.Error()}, nil
	}
	if len(inputs) == 0 {
		if w.State == store.WorkCompleted {
			return plugin.Observation{Status: abi.StatusSettled, Outcome: &abi.Outcome{Result: "completed", Summary: "the work was completed; its thread starts nothing more"}}, nil
		}
		return plugin.Observation{Status: abi.StatusPending, Note: "no new item"}, nil
	}
	d := ThreadDetail{WorkID: w.ID.String(), Title: w.Title, Items: make([]ThreadItem, 0, len(inputs))}
	for _, in := range inputs {
		d.Items = append(d.Items, ThreadItem{N: in.N, Source: in.Source, Item: in.Item, Revision: in.Revision, Thread: in.Thread, Text: in.Text, RecordedAt: in.RecordedAt})
		d.Last = in.N
	}
	detail, err := json.Marshal(d)
	if err != nil {
		return plugin.Observation{}, err
	}
	return plugin.Observation{Status: abi.StatusSettled, Outcome: &abi.Outcome{
		Result: "new_items", Summary: fmt.Sprintf("%d new item(s) in %q", len(d.Items), w.Title), Detail: detail,
	}}, nil
}

// Settled implements the scheduler's SettledHook: once a wake is
// persisted, the Work's agent has been given its items. A crash before
// this leaves them unconsumed, so the next wait carries them again: a
// repeat is cheaper than a loss.
func (k *Kinds) Settled(ctx context.Context, w store.Watch) {
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
	if _, err := k.ob.o.Store.ConsumeWork(ctx, id, d.Last); err != nil {
		k.ob.log.Error("recording a work's consumed input", "work", d.WorkID, "err", err)
	}
}
