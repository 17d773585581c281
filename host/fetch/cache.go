package fetch

import (
	"container/list"
	"strings"
	"time"

	"github.com/vigilhq/vigil/api/abi"
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

	// held is the last result, answered as is until heldAt+hold.
	held   *abi.FetchResponse
	heldAt time.Time

	// The validators of stored, the last 2xx response that carried any,
	// replayed on the next request to the origin; a 304 then answers
	// stored. Both values passed sendable when they were kept.
	etag, lastModified string
	stored             *abi.FetchResponse

	usedAt time.Time
	elem   *list.Element
	size   int64
}

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

// cache holds results and validators per resource. It is bounded twice:
// an entry not used for idle is dropped, and the entries' total size
// (bodies plus a fixed overhead) stays under maxBytes, least recently used
// dropped first. Both are enforced on access; nothing runs in the
// background. Not safe for concurrent use: the issuer holds a lock.
type cache struct {
	hold, idle time.Duration
	maxBytes   int64
	bytes      int64
	m          map[string]*resource
	lru        *list.List // front: most recently used
}

func newCache(hold time.Duration, maxBytes int64) *cache {
	return &cache{hold: hold, idle: 10 * hold, maxBytes: maxBytes, m: make(map[string]*resource), lru: list.New()}
}

// sweep drops the entries not used since now-idle, oldest first.
func (c *cache) sweep(now time.Time) {
	for e := c.lru.Back(); e != nil; e = c.lru.Back() {
		r := e.Value.(*resource)
		if now.Sub(r.usedAt) < c.idle {
			return
		}
		c.drop(r)
	}
}

func (c *cache) drop(r *resource) {
	c.lru.Remove(r.elem)
	delete(c.m, r.key)
	c.bytes -= r.size
}

// touch returns the entry of key, creating it, and marks it used at now.
func (c *cache) touch(key, url string, now time.Time) *resource {
	c.sweep(now)
	r := c.m[key]
	if r == nil {
		r = &resource{key: key, url: url}
		r.elem = c.lru.PushFront(r)
		r.size = r.weigh()
		c.bytes += r.size
		c.m[key] = r
	} else {
		c.lru.MoveToFront(r.elem)
	}
	r.usedAt = now
	return r
}

// fresh returns the result held for key when it was obtained less than
// hold before now.
func (c *cache) fresh(key string, now time.Time) (abi.FetchResponse, bool) {
	c.sweep(now)
	r := c.m[key]
	if r == nil || r.held == nil || now.Sub(r.heldAt) >= c.hold {
		return abi.FetchResponse{}, false
	}
	r.usedAt = now
	c.lru.MoveToFront(r.elem)
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
	held *abi.FetchResponse // nil: hold nothing
	// keep: the stored response and validators stay as they are;
	// otherwise they are replaced by stored/etag/lastModified (all empty
	// clears them).
	keep               bool
	stored             *abi.FetchResponse
	etag, lastModified string
}

// put records u for key at now, then evicts past the byte bound.
func (c *cache) put(key, url string, now time.Time, u update) {
	r := c.touch(key, url, now)
	if u.held != nil {
		r.held, r.heldAt = u.held, now
	}
	if !u.keep {
		r.stored, r.etag, r.lastModified = u.stored, u.etag, u.lastModified
	}
	c.bytes -= r.size
	r.size = r.weigh()
	c.bytes += r.size
	for c.bytes > c.maxBytes {
		back := c.lru.Back().Value.(*resource)
		if back == r {
			break
		}
		c.drop(back)
	}
}

// clearValidators forgets the stored validators and response of every
// resource of url: the next request for it goes out unconditional.
func (c *cache) clearValidators(url string) {
	for _, r := range c.m {
		if r.url != url {
			continue
		}
		r.etag, r.lastModified, r.stored = "", "", nil
		c.bytes -= r.size
		r.size = r.weigh()
		c.bytes += r.size
	}
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
