package fetch

import (
	"container/heap"
	"strings"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// resourceKey identifies a resource: the method, the URL, the plugin's
// headers (sorted names and values) and the secret's name. Screened names,
// values and methods hold no NUL, and a parsed URL's String escapes one,
// so NUL separates the parts without ambiguity.
func resourceKey(cmd Command) string {
	var b strings.Builder
	u := cmd.URL.String()
	n := len(cmd.Method) + len(u) + len(cmd.Secret) + 3
	for _, h := range cmd.Headers {
		n += len(h.Name) + len(h.Value) + 2
	}
	b.Grow(n)
	b.WriteString(cmd.Method)
	b.WriteByte(0)
	b.WriteString(u)
	for _, h := range cmd.Headers {
		b.WriteByte(0)
		b.WriteString(h.Name)
		b.WriteByte(0)
		b.WriteString(h.Value)
	}
	b.WriteByte(0)
	b.WriteString(cmd.Secret)
	return b.String()
}

// resource is what the issuer keeps of one resource.
type resource struct {
	key string
	url string // cmd.URL.String(), for clearing validators by URL

	// held is the last result, answered as is to a reader whose hold (its
	// cadence, at least MinInterval) is longer than the result's age.
	held   *abi.FetchResponse
	heldAt time.Time
	// span is how long held counts as fresh, which no room is ever made
	// by dropping: the longest hold among the readers it was fetched for
	// or served, in this generation and the one before (seen is this
	// generation's, carried into the next one's span by put).
	span, seen time.Duration

	// The validators of stored, the last 2xx response that carried any,
	// replayed on the next request to the origin; a 304 then answers
	// stored. Both values passed sendable when they were kept.
	etag, lastModified string
	stored             *abi.FetchResponse

	index int // in cache.order
	size  int64
}

// freshUntil is when held stops being fresh (the zero time before put
// first holds one).
func (r *resource) freshUntil() time.Time { return r.heldAt.Add(r.span) }

func (r *resource) fresh(now time.Time) bool { return now.Before(r.freshUntil()) }

// validators is a copy of what a revalidation needs.
type validators struct {
	etag, lastModified string
	stored             *abi.FetchResponse
}

// entryOverhead is the size charged to an entry beyond its bodies.
const entryOverhead = 512

func (r *resource) weigh() int64 {
	n := int64(entryOverhead + len(r.key) + len(r.url) + len(r.etag) + len(r.lastModified))
	if r.held != nil {
		n += int64(len(r.held.Body))
	}
	if r.stored != nil && r.stored != r.held {
		n += int64(len(r.stored.Body))
	}
	return n
}

// byFreshness orders the entries by freshUntil, the first to stop being
// fresh first: the order in which room is made.
type byFreshness []*resource

func (h byFreshness) Len() int           { return len(h) }
func (h byFreshness) Less(i, j int) bool { return h[i].freshUntil().Before(h[j].freshUntil()) }
func (h byFreshness) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *byFreshness) Push(x any) {
	r := x.(*resource)
	r.index = len(*h)
	*h = append(*h, r)
}
func (h *byFreshness) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return r
}

// cache holds results and validators per resource, under maxBytes (bodies
// plus a fixed overhead per entry). An entry outlives its freshness, for
// its validators and for a slower reader, until room is needed; room is
// made by dropping entries that are no longer fresh, the first to have
// stopped being fresh first, and never by dropping a fresh one: when every
// other entry is fresh, the new result is not kept (put reports it) and the
// next read of its resource goes to the origin. Nothing runs in the
// background. Not safe for concurrent use: the issuer holds a lock.
type cache struct {
	minHold  time.Duration
	maxBytes int64
	bytes    int64
	m        map[string]*resource
	order    byFreshness
}

func newCache(minHold time.Duration, maxBytes int64) *cache {
	return &cache{minHold: minHold, maxBytes: maxBytes, m: make(map[string]*resource)}
}

func (c *cache) drop(r *resource) {
	heap.Remove(&c.order, r.index)
	delete(c.m, r.key)
	c.bytes -= r.size
}

// fresh returns the result held for key when it is younger than hold, the
// reader's own (its cadence, at least minHold). Serving a reader whose
// hold is longer than the entry's span extends the span: the entry is
// fresh for as long as that reader would be served it.
func (c *cache) fresh(key string, now time.Time, hold time.Duration) (abi.FetchResponse, bool) {
	hold = max(hold, c.minHold)
	r := c.m[key]
	if r == nil || r.held == nil || now.Sub(r.heldAt) >= hold {
		return abi.FetchResponse{}, false
	}
	r.seen = max(r.seen, hold)
	if hold > r.span {
		r.span = hold
		heap.Fix(&c.order, r.index)
	}
	return *r.held, true
}

// validators returns the stored validators of key, if any.
func (c *cache) validators(key string) validators {
	r := c.m[key]
	if r == nil {
		return validators{}
	}
	return validators{etag: r.etag, lastModified: r.lastModified, stored: r.stored}
}

// update is what one origin request left for a resource.
type update struct {
	held *abi.FetchResponse // the result to hold: every origin request's
	// keep: the stored response and validators stay as they are;
	// otherwise they are replaced by stored/etag/lastModified (all empty
	// clears them).
	keep               bool
	stored             *abi.FetchResponse
	etag, lastModified string
}

// put records u for key at now, for a reader whose hold is hold, then
// keeps the byte bound by dropping entries that are no longer fresh. It
// reports false when room could be made only by dropping a fresh entry:
// then nothing of key is kept.
func (c *cache) put(key, url string, now time.Time, u update, hold time.Duration) bool {
	hold = max(hold, c.minHold)
	r := c.m[key]
	if r == nil {
		r = &resource{key: key, url: url}
		c.m[key] = r
		heap.Push(&c.order, r)
	}
	r.held, r.heldAt = u.held, now
	r.span, r.seen = max(hold, r.seen), hold
	if !u.keep {
		r.stored, r.etag, r.lastModified = u.stored, u.etag, u.lastModified
	}
	c.resize(r)
	heap.Fix(&c.order, r.index)
	for c.bytes > c.maxBytes {
		first := c.order[0]
		if first == r || first.fresh(now) {
			c.drop(r)
			return false
		}
		c.drop(first)
	}
	return true
}

func (c *cache) resize(r *resource) {
	c.bytes -= r.size
	r.size = r.weigh()
	c.bytes += r.size
}

// clearValidators forgets the stored validators and response of every
// resource of url: the next request for it goes out unconditional.
func (c *cache) clearValidators(url string) {
	for _, r := range c.m {
		if r.url != url {
			continue
		}
		c.unstore(r)
	}
}

// unstore forgets r's stored validators and response.
func (c *cache) unstore(r *resource) {
	r.etag, r.lastModified, r.stored = "", "", nil
	c.resize(r)
}

// forget forgets the stored validators and response of key when the
// stored response is the one whose fingerprint is fp, and reports whether
// it did. Validators stored since for other bytes stay: they were not the
// ones the failure was about. The held result stays too: it is what the
// other readers of this interval are answered, a read of its own.
func (c *cache) forget(key, fp string) bool {
	r := c.m[key]
	if r == nil || r.stored == nil || r.stored.Fingerprint != fp {
		return false
	}
	c.unstore(r)
	return true
}

// conditional returns the headers a revalidation adds to cmd for the
// stored validators v: if-none-match for the ETag, if-modified-since for
// the Last-Modified. Each value is screened again with the refusal
// table's value rule (a value kept under an older rule, or damaged, is
// dropped rather than sent), and the additions must keep the command
// within MaxHeaders and MaxHeaderBytes. A command that carries its own
// if-none-match or if-modified-since gets nothing added: the plugin's
// conditional wins. Without a stored response there is nothing a 304
// could answer, so nothing is added either.
func conditional(cmd Command, v validators) []Header {
	if v.stored == nil {
		return nil
	}
	if _, ok := cmd.Header("if-none-match"); ok {
		return nil
	}
	if _, ok := cmd.Header("if-modified-since"); ok {
		return nil
	}
	count, total := len(cmd.Headers), 0
	for _, h := range cmd.Headers {
		total += len(h.Name) + len(h.Value)
	}
	var out []Header
	for _, h := range []Header{{"if-none-match", v.etag}, {"if-modified-since", v.lastModified}} {
		if h.Value == "" || !sendable(h.Value) || trimOWS(h.Value) != h.Value {
			continue
		}
		if count+1 > MaxHeaders || total+len(h.Name)+len(h.Value) > MaxHeaderBytes {
			continue
		}
		count++
		total += len(h.Name) + len(h.Value)
		out = append(out, h)
	}
	return out
}

// mintValidator is the value of a response's ETag or Last-Modified as it
// may be kept: trimmed, and empty when it could not be sent back.
func mintValidator(v string) string {
	v = trimOWS(v)
	if !sendable(v) || len(v) > MaxHeaderBytes/2 {
		return ""
	}
	return v
}
