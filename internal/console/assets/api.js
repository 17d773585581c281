// The REST API as the console calls it: the bearer token from
// sessionStorage in the Authorization header (never in a URL), errors as
// ApiError with the API's code, field and message.

const TOKEN_KEY = 'vigil.token';

export function getToken() { return sessionStorage.getItem(TOKEN_KEY) || ''; }
export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(status, code, message, field, setting) {
    super(message);
    this.status = status; this.code = code; this.field = field || ''; this.setting = setting || '';
  }
}

// NetworkError: the host did not answer at all.
export class NetworkError extends Error {}

function headers(extra) {
  const h = { Accept: 'application/json', ...extra };
  const t = getToken();
  if (t) h.Authorization = 'Bearer ' + t;
  return h;
}

async function fail(resp) {
  let e = { code: 'http_' + resp.status, message: resp.statusText };
  try { const b = await resp.json(); if (b && b.error) e = b.error; } catch (_) { /* not the envelope */ }
  return new ApiError(resp.status, e.code, e.message, e.field, e.setting);
}

export async function api(method, path, body) {
  let resp;
  try {
    resp = await fetch('/api/v1' + path, {
      method, headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store',
    });
  } catch (err) {
    throw new NetworkError('the host does not answer: ' + err.message);
  }
  if (!resp.ok) throw await fail(resp);
  if (resp.status === 204) return null;
  return resp.json();
}

export const q = (o) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(o)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? '?' + s : '';
};

// parseEvents splits server-sent events off the front of buf: each
// event's id, event name and data (its data lines joined by newlines),
// comments and unknown fields skipped, and the incomplete rest to keep
// for the next chunk. Lines end in LF or CRLF (a CR at a chunk's end
// waits in the rest for its LF).
export function parseEvents(buf) {
  const events = [];
  const text = buf.replace(/\r\n/g, '\n');
  let start = 0;
  for (;;) {
    const end = text.indexOf('\n\n', start);
    if (end < 0) break;
    const e = { id: '', event: 'message', data: '' };
    const data = [];
    for (const line of text.slice(start, end).split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      let value = i < 0 ? '' : line.slice(i + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'id') e.id = value;
      else if (field === 'event') e.event = value;
      else if (field === 'data') data.push(value);
    }
    e.data = data.join('\n');
    if (data.length || e.id) events.push(e);
    start = end + 2;
  }
  return { events, rest: text.slice(start) };
}

// stream reads a recipient's mailbox stream with a streaming fetch (an
// EventSource cannot send the Authorization header), calling onMessage
// for each message, and reconnects with Last-Event-ID after an error,
// backing off from 1 s to 15 s. onState hears 'open', 'retrying' (with
// the error) and 'refused' (an ApiError: a reconnect would be refused
// again). It returns a function that stops it.
export function stream(recipient, after, onMessage, onState) {
  const ctl = new AbortController();
  let last = after || 0;
  let delay = 1000;
  let stopped = false;
  const run = async () => {
    while (!stopped) {
      try {
        const h = headers({ Accept: 'text/event-stream' });
        if (last > 0) h['Last-Event-ID'] = String(last);
        let resp;
        try {
          resp = await fetch('/api/v1/recipients/' + encodeURIComponent(recipient) + '/mailbox/stream', { headers: h, signal: ctl.signal, cache: 'no-store' });
        } catch (err) {
          throw new NetworkError(err.message);
        }
        if (!resp.ok) {
          const e = await fail(resp);
          if (resp.status >= 400 && resp.status < 500) { onState('refused', e); return; }
          throw e;
        }
        onState('open');
        delay = 1000;
        const reader = resp.body.getReader();
        const dec = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          const { events, rest } = parseEvents(buf);
          buf = rest;
          for (const e of events) {
            if (!e.data) continue;
            const m = JSON.parse(e.data);
            last = Number(e.id) || m.seq;
            onMessage(m);
          }
        }
        if (!stopped) throw new NetworkError('the stream ended');
      } catch (err) {
        if (stopped || ctl.signal.aborted) return;
        onState('retrying', err);
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 15000);
      }
    }
  };
  run();
  return () => { stopped = true; ctl.abort(); };
}

// mailboxEnd is the sequence number of a mailbox's last message, read a
// thousand at a time (at most 100 pages).
export async function mailboxEnd(recipient) {
  let after = 0;
  for (let i = 0; i < 100; i++) {
    const mb = await api('GET', '/recipients/' + encodeURIComponent(recipient) + '/mailbox' + q({ after, limit: 1000 }));
    after = mb.next;
    if (mb.messages.length < 1000) break;
  }
  return after;
}
