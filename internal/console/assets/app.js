// The vigil console: hash-routed pages over the REST API.
import { render } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, NetworkError, getToken, setToken, stream, mailboxEnd, q } from './api.js';
import { html, Time, useNow, Problem, Empty, Confirm, Json, State, seconds, bytes } from './ui.js';
import { RegisterForm } from './form.js';

// ---- routing ----
const go = (path) => { location.hash = '#' + path; };
const link = (...parts) => '#/' + parts.map(encodeURIComponent).join('/');

// useLoad calls fn on mount and whenever deps change (and every `every`
// ms when set), keeping the last good value beside the last error.
function useLoad(fn, deps, every) {
  const [state, setState] = useState({ data: null, err: null, loading: true });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    let timer;
    // A host that does not answer is asked again every 3 s (the page
    // says it is retrying); a refusal waits for the next change.
    const run = () => fn().then(
      (data) => { if (live) { setState({ data, err: null, loading: false }); if (every) timer = setTimeout(run, every); } },
      (err) => {
        if (!live) return;
        setState((s) => ({ data: s.data, err, loading: false }));
        if (err instanceof NetworkError) timer = setTimeout(run, 3000);
        else if (every) timer = setTimeout(run, every);
      },
    );
    run();
    return () => { live = false; clearTimeout(timer); };
  }, [...deps, n]);
  return [state, () => setN((x) => x + 1)];
}

// ---- sign in ----
function SignIn({ onDone, onCancel, refused }) {
  const ref = useRef();
  const input = useRef();
  const [v, setV] = useState('');
  useEffect(() => {
    ref.current.showModal(); input.current.focus();
    const cancel = (e) => { e.preventDefault(); onCancel(); };
    ref.current.addEventListener('cancel', cancel);
    return () => ref.current && ref.current.removeEventListener('cancel', cancel);
  }, []);
  const submit = (e) => { e.preventDefault(); onDone(v.trim()); };
  return html`<dialog ref=${ref} aria-labelledby="signin-title" class="signin">
    <form onSubmit=${submit}>
      <h2 id="signin-title">Enter a token</h2>
      <p>This host has tokens configured. Your token is kept for this browser tab only (sessionStorage) and sent in the Authorization header, never in a URL.</p>
      ${refused ? html`<p class="field-error" role="alert">${refused}</p>` : ''}
      <label for="token">Bearer token</label>
      <input id="token" ref=${input} type="password" autocomplete="off" value=${v} onInput=${(e) => setV(e.target.value)}/>
      <div class="buttons">
        <button type="button" onClick=${onCancel}>Cancel</button>
        <button type="submit" class="primary">Sign in</button>
      </div>
    </form>
  </dialog>`;
}

// ---- overview ----
// StorageFull is the banner of a host whose data directory is too full
// for clients' writes: what is refused, what goes on, and what to do.
function StorageFull({ s }) {
  if (!s || !s.read_only) return null;
  return html`<div class="problem" role="alert" data-testid="storage-full"><strong>Writes are refused: the disk is nearly full.</strong>
    The data directory <code class="hash">${s.dir}</code> has ${bytes(s.free_bytes)} free; writes need ${bytes(s.needed_bytes)}.
    New watches and other writes are answered <code>507 insufficient_storage</code>. Reads, mailboxes and streams go on, and the watches
    already registered still settle. Free space there: writes resume by themselves, without a restart.</div>`;
}

// kindRows is the overview's kinds table: each kind with probes since
// start, and each with watches pending (after a restart a kind can have
// pending watches and no probe yet), with its pending count beside its
// counters since start.
function kindRows(o) {
  const pending = o.pending_by_kind || {};
  const rows = o.kinds.map((k) => ({ ...k, pending: pending[k.kind] || 0 }));
  const seen = new Set(o.kinds.map((k) => k.kind));
  for (const kind of Object.keys(pending).sort()) {
    if (!seen.has(kind)) rows.push({ kind, pending: pending[kind], probes: {}, faults: {}, calls: 0, call_mean_seconds: 0, call_p99_seconds: 0, lag_p99_seconds: 0 });
  }
  return rows;
}

function Overview({ auth }) {
  const now = useNow();
  const [{ data: o, err }] = useLoad(() => api('GET', '/overview'), [], 5000);
  if (!o) return html`<${Problem} err=${err} onSignIn=${auth}/>${err ? '' : html`<p class="muted">Loading…</p>`}`;
  const failed = o.pushes.entered.failed || 0;
  const kinds = kindRows(o);
  return html`<section>
    <h1>Overview</h1>
    <${Problem} err=${err} onSignIn=${auth}/>
    <${StorageFull} s=${o.storage}/>
    <div class="cards">
      <div class="card"><h2>Watches</h2><dl>
        ${Object.entries(o.watches).map(([s, n]) => html`<div class=${'kv state-row-' + s}><dt><${State} s=${s}/></dt><dd data-testid=${'watches-' + s}>${n}</dd></div>`)}
      </dl><p class="muted small">counted <${Time} t=${o.watches_counted_at} now=${now}/></p></div>
      <div class="card"><h2>Scheduler</h2><dl>
        <div class="kv"><dt>armed</dt><dd>${o.scheduler.armed}</dd></div>
        <div class="kv"><dt>ready queue</dt><dd>${o.scheduler.ready}</dd></div>
        <div class="kv"><dt>lag p50</dt><dd>${seconds(o.scheduler.lag_p50_seconds)}</dd></div>
        <div class="kv"><dt>lag p99</dt><dd>${seconds(o.scheduler.lag_p99_seconds)}</dd></div>
        <div class="kv"><dt>next wake</dt><dd><${Time} t=${o.scheduler.next_wake} now=${now}/></dd></div>
      </dl></div>
      <div class="card"><h2>Webhook pushes</h2><dl>
        <div class="kv"><dt>held now</dt><dd>${o.pushes.queued}</dd></div>
        <div class="kv"><dt>retrying now</dt><dd class=${o.pushes.retrying ? 'warn' : ''}>${o.pushes.retrying}</dd></div>
        <div class="kv"><dt>failed since start</dt><dd class=${failed ? 'bad' : ''}>${failed}</dd></div>
        <div class="kv"><dt>delivered since start</dt><dd>${o.pushes.entered.delivered || 0}</dd></div>
      </dl></div>
      <div class="card"><h2>Fetch dead letters</h2><p class="big"><a href="#/dead-letters">${o.dead_letters}</a></p><p class="muted small">ever written</p></div>
      ${o.storage ? html`<div class="card"><h2>Storage</h2><dl>
        <div class="kv"><dt>free</dt><dd data-testid="storage-free" class=${o.storage.read_only ? 'bad' : ''}>${bytes(o.storage.free_bytes)}</dd></div>
        <div class="kv"><dt>needed for writes</dt><dd>${bytes(o.storage.needed_bytes)}</dd></div>
        <div class="kv"><dt>writes</dt><dd data-testid="storage-writes" class=${o.storage.read_only ? 'bad' : ''}>${o.storage.read_only ? 'refused' : 'taken'}</dd></div>
      </dl><p class="muted small"><code class="hash">${o.storage.dir}</code></p></div>` : ''}
    </div>
    <h2>Kinds</h2>
    ${kinds.length === 0 ? html`<${Empty}>No watches pending and no probes yet. <a href="#/register">Register a watch</a> to see its kind here.</${Empty}>` : html`
    <div class="scroll"><table>
      <thead><tr><th>kind</th><th title="pending now, counted with the watches by state">pending</th><th>probes</th><th>faults</th><th>calls</th><th>mean</th><th>p99</th><th>lag p99</th></tr></thead>
      <tbody>${kinds.map((k) => html`<tr>
        <td><a href=${link('plugins', k.kind)}>${k.kind}</a></td>
        <td data-testid=${'pending-kind-' + k.kind}>${k.pending}</td>
        <td>${Object.entries(k.probes).map(([r, n]) => html`<span class="tag">${r} ${n}</span>`)}</td>
        <td>${Object.keys(k.faults).length ? Object.entries(k.faults).map(([r, n]) => html`<span class="tag bad">${r} ${n}</span>`) : html`<span class="muted">none</span>`}</td>
        <td>${k.calls}</td><td>${seconds(k.call_mean_seconds)}</td><td>${seconds(k.call_p99_seconds)}</td><td>${seconds(k.lag_p99_seconds)}</td>
      </tr>`)}</tbody></table></div>`}
    <p class="muted small">at <${Time} t=${o.at} now=${now}/>; refreshed every 5 s</p>
  </section>`;
}

// ---- recipients ----
function Recipients({ auth }) {
  const now = useNow();
  const [{ data, err }] = useLoad(() => api('GET', '/recipients'), [], 10000);
  return html`<section><h1>Recipients</h1>
    <${Problem} err=${err} onSignIn=${auth}/>
    ${data && data.recipients.length === 0 ? html`<${Empty}>No recipients yet. An agent becomes one with <code>vigil recipient set ID --status running</code> or <code>PUT /api/v1/recipients/ID</code>.</${Empty}>` : ''}
    ${data && data.recipients.length > 0 ? html`<div class="scroll"><table>
      <thead><tr><th>id</th><th>status</th><th>pending</th><th>webhook</th><th>updated</th></tr></thead>
      <tbody>${data.recipients.map((r) => html`<tr>
        <td><a href=${link('recipients', r.id)}>${r.id}</a></td><td><${State} s=${r.status}/></td>
        <td>${r.pending}${r.pending_capped ? '+' : ''}</td>
        <td>${r.webhook ? html`<span class=${r.webhook.disabled_at ? 'bad' : ''}>${r.webhook.url}</span>` : html`<span class="muted">none</span>`}</td>
        <td><${Time} t=${r.updated_at} now=${now}/></td></tr>`)}</tbody></table></div>` : ''}
  </section>`;
}

function WatchRows({ watches, now }) {
  return html`<div class="scroll"><table>
    <thead><tr><th>watch</th><th>kind</th><th>state</th><th>last probe</th><th>deadline</th><th>probes</th><th>last observation</th></tr></thead>
    <tbody>${watches.map((w) => html`<tr>
      <td><a href=${link('watches', w.id)}><code>${w.id.slice(0, 10)}…</code></a></td><td>${w.kind}</td><td><${State} s=${w.state}/></td>
      <td><${Time} t=${w.last_probe_at} now=${now}/></td><td><${Time} t=${w.expires_at} now=${now}/></td>
      <td>${w.attempts}</td><td class="note">${w.last_fault ? html`<span class="bad">${w.last_fault.reason}</span> ` : ''}${w.outcome ? w.outcome.result : (w.last_note || '')}</td>
    </tr>`)}</tbody></table></div>`;
}

// RecipientWatches pages through the recipient's watches with the API's
// cursor, 50 at a time: one page in memory and in the DOM.
function RecipientWatches({ id, auth, bump }) {
  const now = useNow();
  const [cursors, setCursors] = useState(['']);
  const [state, setState] = useState('');
  const after = cursors[cursors.length - 1];
  const [{ data, err }] = useLoad(() => api('GET', '/watches' + q({ recipient: id, state, after, limit: 50 })), [id, after, state, bump], 15000);
  return html`<div>
    <div class="toolbar"><label for="wstate">State</label>
      <select id="wstate" value=${state} onChange=${(e) => { setState(e.target.value); setCursors(['']); }}>
        ${['', 'pending', 'fired', 'expired', 'cancelled', 'undeliverable', 'unwatchable'].map((s) => html`<option value=${s}>${s || 'all'}</option>`)}
      </select>
      <a class="button" href=${'#/register?recipient=' + encodeURIComponent(id)}>Register a watch</a></div>
    <${Problem} err=${err} onSignIn=${auth}/>
    ${data && data.watches.length === 0 ? html`<${Empty}>No watches${state ? ' ' + state : ''} for ${id}.</${Empty}>` : ''}
    ${data && data.watches.length > 0 ? html`<${WatchRows} watches=${data.watches} now=${now}/>` : ''}
    <nav class="pager" aria-label="watch pages">
      <button disabled=${cursors.length === 1} onClick=${() => setCursors(cursors.slice(0, -1))}>Previous</button>
      <span>page ${cursors.length}</span>
      <button disabled=${!data || !data.next} onClick=${() => setCursors([...cursors, data.next])}>Next</button>
    </nav>
  </div>`;
}

// MAILBOX_PAGE is a mailbox page's rows; MAILBOX_WINDOW how many of the
// newest messages the page keeps from the stream. An older page is read
// from the API when it is shown, so what the page holds is bounded by
// MAILBOX_WINDOW + MAILBOX_PAGE however many messages the stream brings.
const MAILBOX_PAGE = 50;
const MAILBOX_WINDOW = 500;

// Mailbox keeps the newest MAILBOX_WINDOW messages the stream brought and
// renders one page, newest first. Page n covers the sequence numbers
// (top - (n+1)·PAGE, top - n·PAGE], top being the newest message's seq:
// live on the first page, fixed at the turn once the reader leaves it, so
// an older page does not slide as messages arrive. The page shown is read
// from the mailbox (GET …/mailbox?after=&limit=) for its push states (the
// stream's events carry the webhook body, without them) and, when it is
// older than the window, for its rows (a failed read of such a page is
// shown; of a page in the window, only its push states wait).
// window.__vigilMailboxHeld is how many messages the page holds now,
// __vigilMailboxHeldMax the most it ever held (the browser test reads
// both).
function Mailbox({ id, auth, onMessage }) {
  const now = useNow();
  const win = useRef({ msgs: [], count: 0 });
  const [, setVer] = useState(0);
  const [live, setLive] = useState({ state: 'connecting' });
  const [view, setView] = useState({ page: 0, top: 0 });
  const [read, setRead] = useState(null);
  const readHeld = useRef(0);
  const held = () => {
    const n = win.current.msgs.length + readHeld.current;
    window.__vigilMailboxHeld = n;
    window.__vigilMailboxHeldMax = Math.max(window.__vigilMailboxHeldMax || 0, n);
  };
  useEffect(() => {
    win.current = { msgs: [], count: 0 };
    setView({ page: 0, top: 0 });
    setRead(null);
    setVer((v) => v + 1);
    let timer = null;
    const stop = stream(id, 0, (m) => {
      const w = win.current;
      w.msgs.push(m);
      w.count++;
      if (w.msgs.length > MAILBOX_WINDOW) w.msgs.shift();
      held();
      if (onMessage) onMessage(m);
      if (!timer) timer = setTimeout(() => { timer = null; setVer((v) => v + 1); }, 100);
    }, (s, e) => setLive({ state: s, err: e }));
    return () => { stop(); clearTimeout(timer); };
  }, [id]);
  const w = win.current;
  const end = w.msgs.length ? w.msgs[w.msgs.length - 1].seq : 0;
  const top = view.page === 0 ? end : view.top;
  const pages = Math.max(1, Math.ceil(top / MAILBOX_PAGE));
  const page = Math.min(view.page, pages - 1);
  const hi = top - page * MAILBOX_PAGE;
  const lo = Math.max(1, hi - MAILBOX_PAGE + 1);
  // The window covers the page when it holds the page's oldest seq or
  // every message there is (a mailbox retention has trimmed starts late).
  const inWindow = w.msgs.length > 0 && (w.msgs[0].seq <= lo || w.msgs.length === w.count);
  useEffect(() => {
    if (hi < 1) { setRead(null); return; }
    let ok = true;
    api('GET', '/recipients/' + encodeURIComponent(id) + '/mailbox' + q({ after: lo - 1, limit: hi - lo + 1 }))
      .then((mb) => { if (ok) setRead({ lo, hi, msgs: mb.messages }); }, (e) => { if (ok) setRead({ lo, hi, msgs: [], err: e }); });
    return () => { ok = false; };
  }, [id, lo, hi]);
  const fresh = read && read.lo === lo && read.hi === hi ? read : null;
  readHeld.current = read ? read.msgs.length : 0;
  held();
  const shown = inWindow
    ? w.msgs.filter((m) => m.seq >= lo && m.seq <= hi).reverse()
    : (fresh ? fresh.msgs.slice().reverse() : []);
  const push = {};
  if (fresh) for (const m of fresh.msgs) push[m.seq] = m.push || null;
  const turn = (n) => setView({ page: n, top: n === 0 ? 0 : top });
  const pager = pages > 1 ? html`<nav class="pager" aria-label="pages">
    <button disabled=${page === 0} onClick=${() => turn(0)}>First</button>
    <button disabled=${page === 0} onClick=${() => turn(page - 1)}>Newer</button>
    <span>page ${page + 1} of ${pages} (${top})</span>
    <button disabled=${page >= pages - 1} onClick=${() => turn(page + 1)}>Older</button>
    <button disabled=${page >= pages - 1} onClick=${() => turn(pages - 1)}>Last</button>
  </nav>` : null;
  return html`<div>
    <p class="live" aria-live="polite" data-end=${end}>${live.state === 'open' ? html`<span class="dot ok"></span> live` : live.state === 'retrying' ? html`<span class="dot warn"></span> the stream dropped: retrying` : live.state === 'refused' ? '' : html`<span class="dot"></span> connecting`}</p>
    ${live.state === 'refused' ? html`<${Problem} err=${live.err} onSignIn=${auth}/>` : ''}
    ${!inWindow && fresh && fresh.err ? html`<${Problem} err=${fresh.err} onSignIn=${auth}/>` : ''}
    ${w.count === 0 && live.state === 'open' ? html`<${Empty}>The mailbox is empty. A watch's message lands here when it settles.</${Empty}>` : ''}
    ${shown.length ? html`<div class="scroll"><table class="mailbox">
      <thead><tr><th>seq</th><th>at</th><th>type</th><th>kind</th><th>outcome</th><th>watch</th><th>push</th></tr></thead>
      <tbody>${shown.map((m) => { const p = push[m.seq]; return html`<tr data-seq=${m.seq}>
        <td>${m.seq}</td><td><${Time} t=${m.at} now=${now}/></td><td>${m.type}</td><td>${m.kind}</td>
        <td><span class=${'tag result-' + m.outcome.result}>${m.outcome.result}</span> ${m.outcome.summary || ''}</td>
        <td><a href=${link('watches', m.watch_id)}><code>${m.watch_id.slice(0, 10)}…</code></a></td>
        <td>${p ? html`<span class=${'tag push-' + p.state} title=${p.last_error || ''}>${p.state}${p.attempts ? ' ×' + p.attempts : ''}</span>` : html`<span class="muted">${p === null ? 'no webhook' : '…'}</span>`}</td>
      </tr>`; })}</tbody></table></div>` : ''}
    ${pager}
  </div>`;
}

function RecipientPage({ id, auth }) {
  const now = useNow();
  const [{ data: r, err }, reload] = useLoad(() => api('GET', '/recipients/' + encodeURIComponent(id)), [id]);
  const [confirm, setConfirm] = useState(null);
  const [actErr, setActErr] = useState(null);
  const [bump, setBump] = useState(0);
  const [secret, setSecret] = useState('');
  // The API replaces the whole record: refs, workspace and heartbeats are
  // sent back as they are, and a webhook (whose secret never leaves the host) only
  // with its secret entered again, as vigil recipient set asks for it.
  const setStatus = async (status) => {
    setActErr(null);
    try {
      const body = { status };
      if (r.refs && r.refs.length) body.refs = r.refs;
      if (r.workspace) body.workspace = r.workspace;
      if (r.heartbeats && r.heartbeats.length) body.heartbeats = r.heartbeats.map((h) => ({ name: h.name, period: h.period, grace: h.grace }));
      if (r.webhook) {
        if (!secret) { setActErr(new ApiError(0, 'webhook_secret_needed', 'this recipient has a webhook: enter its secret to keep it (the host never shows it)')); return; }
        body.webhook = { url: r.webhook.url, secret };
      }
      await api('PUT', '/recipients/' + encodeURIComponent(id), body);
      setSecret('');
      reload(); setBump((b) => b + 1);
    } catch (e) { setActErr(e); }
  };
  const askPause = async (status) => {
    setActErr(null);
    let n = '?';
    if (status === 'paused') {
      try {
        const l = await api('GET', '/recipients');
        const me = l.recipients.find((x) => x.id === id);
        if (me) n = me.pending + (me.pending_capped ? ' or more' : '');
      } catch (e) { /* the count is advice; the pause itself is checked by the API */ }
    }
    setConfirm({ status, n });
  };
  if (!r) return html`<section><h1>Recipient ${id}</h1><${Problem} err=${err} onSignIn=${auth}/></section>`;
  return html`<section>
    <h1>Recipient <code>${r.id}</code> <${State} s=${r.status}/></h1>
    <dl class="facts">
      <div class="kv"><dt>webhook</dt><dd>${r.webhook ? html`${r.webhook.url}${r.webhook.disabled_at ? html` <span class="bad">disabled <${Time} t=${r.webhook.disabled_at} now=${now}/>: ${r.webhook.disabled_reason}</span>` : ''}` : html`<span class="muted">none (mailbox only)</span>`}</dd></div>
      <div class="kv"><dt>standing refs</dt><dd>${r.refs.length ? r.refs.map((x) => html`<span class="tag">${x.kind}</span>`) : html`<span class="muted">none</span>`}</dd></div>
      ${(r.heartbeats || []).map((h) => html`<div class="kv"><dt>heartbeat ${h.name}</dt><dd>every ${h.period} + ${h.grace}; ${h.last_ping ? html`last ping <${Time} t=${h.last_ping} now=${now}/>${h.failed ? html` <span class="bad">failed${h.note ? ': ' + h.note : ''}</span>` : ''}` : html`<span class="muted">no ping yet</span>`}${h.ping_url ? html`<br/><code class="hash">${h.ping_url}</code>` : ''}</dd></div>`)}
      ${r.phase ? html`<div class="kv"><dt>phase</dt><dd>${r.phase.name} ${r.phase.text || ''}</dd></div>` : ''}
      <div class="kv"><dt>created</dt><dd><${Time} t=${r.created_at} now=${now}/></dd></div>
      <div class="kv"><dt>updated</dt><dd><${Time} t=${r.updated_at} now=${now}/></dd></div>
    </dl>
    <div class="toolbar">
      ${r.status === 'running' ? html`<button class="danger" onClick=${() => askPause('paused')}>Pause</button>` : html`<button onClick=${() => (r.webhook ? askPause('running') : setStatus('running'))}>Resume</button>`}
    </div>
    <${Problem} err=${actErr} onSignIn=${auth}/>
    ${confirm ? html`<${Confirm} title=${(confirm.status === 'paused' ? 'Pause ' : 'Resume ') + id + '?'} confirm=${confirm.status === 'paused' ? 'Pause' : 'Resume'} onCancel=${() => setConfirm(null)} onConfirm=${() => { setConfirm(null); setStatus(confirm.status); }}>
      ${confirm.status === 'paused' ? html`<p>Pausing cancels its <strong data-testid="pause-count">${confirm.n}</strong> pending watches, and messages to it are recorded undeliverable until it runs again.</p>` : ''}
      ${r.webhook ? html`<label for="wh-secret">Webhook secret (to keep ${r.webhook.url})</label><input id="wh-secret" type="password" autocomplete="off" value=${secret} onInput=${(e) => setSecret(e.target.value)}/>` : ''}
    </${Confirm}>` : ''}
    <h2>Watches</h2>
    <${RecipientWatches} id=${id} auth=${auth} bump=${bump}/>
    <h2>Mailbox</h2>
    <${Mailbox} id=${id} auth=${auth} onMessage=${() => setBump((b) => b + 1)}/>
  </section>`;
}

// ---- a watch ----
async function findMessage(w) {
  let after = 0;
  for (let i = 0; i < 20; i++) {
    const mb = await api('GET', '/recipients/' + encodeURIComponent(w.recipient.id) + '/mailbox' + q({ after, limit: 1000 }));
    const m = mb.messages.find((x) => x.watch_id === w.id);
    if (m) return m;
    if (mb.messages.length < 1000) return null;
    after = mb.next;
  }
  return null;
}

function WatchPage({ id, auth }) {
  const now = useNow(1000);
  const [{ data: w, err }, reload] = useLoad(() => api('GET', '/watches/' + encodeURIComponent(id)), [id], 10000);
  const [msg, setMsg] = useState(null);
  const [confirm, setConfirm] = useState(false);
  const [actErr, setActErr] = useState(null);
  const rid = w && w.recipient.id;
  const settled = w && w.state !== 'pending';
  // Live: the recipient's stream from its end; a message for this watch
  // re-reads it.
  useEffect(() => {
    if (!rid || settled) return;
    let stop = () => {};
    let live = true;
    mailboxEnd(rid).then((end) => {
      if (!live) return;
      stop = stream(rid, end, (m) => { if (m.watch_id === id) reload(); }, () => {});
    }, () => {});
    return () => { live = false; stop(); };
  }, [rid, settled]);
  useEffect(() => {
    if (!settled) return;
    let ok = true;
    findMessage(w).then((m) => ok && setMsg(m), () => {});
    return () => { ok = false; };
  }, [settled, w && w.settled_at]);
  const cancel = async () => {
    setConfirm(false); setActErr(null);
    try { await api('DELETE', '/watches/' + encodeURIComponent(id)); reload(); } catch (e) { setActErr(e); }
  };
  if (!w) return html`<section><h1>Watch</h1><${Problem} err=${err} onSignIn=${auth}/></section>`;
  const events = [
    { at: w.created_at, what: 'registered', detail: 'by ' + (w.registered_by || 'local') },
    w.last_probe_at ? { at: w.last_probe_at, what: 'last observation', detail: (w.last_fault ? 'fault ' + w.last_fault.reason + ': ' + (w.last_fault.message || '') : w.last_note || '') + ' (' + w.attempts + ' probes)' } : null,
    w.settled_at ? { at: w.settled_at, what: 'settled: ' + w.state, detail: w.outcome ? w.outcome.result + (w.outcome.summary ? ' · ' + w.outcome.summary : '') : '' } : null,
    msg ? { at: msg.at, what: 'message #' + msg.seq, detail: msg.type } : null,
    w.receipt ? { at: w.settled_at, what: 'receipt', detail: w.receipt } : null,
    msg && msg.push ? { at: msg.push.updated_at, what: 'push ' + msg.push.state, detail: msg.push.attempts + ' attempts' + (msg.push.last_error ? ' · ' + msg.push.last_error : '') + (msg.push.next_attempt ? ' · next ' + new Date(msg.push.next_attempt).toISOString() : '') } : null,
  ].filter(Boolean);
  return html`<section>
    <h1>Watch <code>${w.id}</code> <span data-testid="watch-state"><${State} s=${w.state}/></span></h1>
    <dl class="facts">
      <div class="kv"><dt>kind</dt><dd><a href=${link('plugins', w.kind)}>${w.kind}</a></dd></div>
      <div class="kv"><dt>recipient</dt><dd><a href=${link('recipients', w.recipient.id)}>${w.recipient.id}</a></dd></div>
      <div class="kv"><dt>cadence</dt><dd>every ${w.every}</dd></div>
      <div class="kv"><dt>deadline</dt><dd><${Time} t=${w.expires_at} now=${now}/></dd></div>
      <div class="kv"><dt>probes</dt><dd>${w.attempts}</dd></div>
    </dl>
    <h2>Params</h2><${Json} v=${w.params}/>
    ${w.state === 'pending' ? html`<div class="toolbar"><button class="danger" onClick=${() => setConfirm(true)}>Cancel this watch</button></div>` : ''}
    <${Problem} err=${actErr || err} onSignIn=${auth}/>
    ${confirm ? html`<${Confirm} title="Cancel this watch?" confirm="Cancel the watch" onCancel=${() => setConfirm(false)} onConfirm=${cancel}>
      <p>${w.recipient.id} gets a message that it was cancelled; this cannot be undone.</p></${Confirm}>` : ''}
    <h2>Timeline</h2>
    <ol class="timeline">${events.map((e) => html`<li><${Time} t=${e.at} now=${now}/> <strong>${e.what}</strong> <span class="muted">${e.detail}</span></li>`)}</ol>
    ${w.outcome && w.outcome.detail ? html`<h2>Outcome detail</h2><${Json} v=${w.outcome.detail}/>` : ''}
  </section>`;
}

// ---- plugins ----
function Plugins({ auth }) {
  const [{ data, err }, reload] = useLoad(() => api('GET', '/plugins'), []);
  const [rel, setRel] = useState(null);
  const doReload = async () => {
    setRel({ busy: true });
    try { const l = await api('POST', '/plugins/reload'); setRel({ ok: l.plugins.length + ' plugins loaded, ' + l.problems.length + ' problems' }); reload(); } catch (e) { setRel({ err: e }); }
  };
  return html`<section><h1>Plugins</h1>
    <div class="toolbar"><button onClick=${doReload} disabled=${rel && rel.busy}>Reload plugins</button>${rel && rel.ok ? html`<span role="status">${rel.ok}</span>` : ''}</div>
    ${rel && rel.err ? html`<${Problem} err=${rel.err} onSignIn=${auth}/>` : ''}
    <${Problem} err=${err} onSignIn=${auth}/>
    ${data ? html`<div class="scroll"><table>
      <thead><tr><th>kind</th><th>version</th><th>summary</th><th>capabilities</th><th>observable</th><th>file</th></tr></thead>
      <tbody>${data.plugins.map((p) => html`<tr><td><a href=${link('plugins', p.kind)}>${p.kind}</a></td><td>${p.version}</td><td>${p.summary}</td>
        <td>${p.capabilities.map((c) => html`<span class="tag">${c}</span>`)}</td><td>${p.observable ? 'yes' : html`<span class="bad">no: ${p.setting}</span>`}</td><td><code>${p.file}</code></td></tr>`)}</tbody>
    </table></div>
    <h2>Problems</h2>
    ${data.problems.length === 0 ? html`<${Empty}>Every plugin file loaded.</${Empty}>` : html`<ul>${data.problems.map((p) => html`<li><code>${p.file}</code> ${p.kind}: <strong>${p.rule}</strong> ${p.error}</li>`)}</ul>`}` : ''}
  </section>`;
}

function PluginPage({ kind, auth }) {
  const [{ data: p, err }] = useLoad(() => api('GET', '/plugins/' + encodeURIComponent(kind)), [kind]);
  const [{ data: o, err: oerr }] = useLoad(() => api('GET', '/overview'), [kind], 10000);
  const [{ data: list }] = useLoad(() => api('GET', '/plugins'), [kind]);
  const k = o && o.kinds.find((x) => x.kind === kind);
  const problems = list ? list.problems.filter((x) => x.kind === kind) : [];
  if (!p) return html`<section><h1>Plugin ${kind}</h1><${Problem} err=${err} onSignIn=${auth}/></section>`;
  return html`<section>
    <h1>Plugin <code>${p.kind}</code> <span class="muted">${p.version}</span></h1>
    <p>${p.summary}</p>
    <dl class="facts">
      <div class="kv"><dt>file</dt><dd><code>${p.file || '(built into the host)'}</code></dd></div>
      <div class="kv"><dt>SHA-256</dt><dd><code class="hash" data-testid="plugin-sha256">${p.sha256 || '—'}</code></dd></div>
      <div class="kv"><dt>standing</dt><dd>${p.standing ? 'yes' : 'no'}${p.pushed ? ' · pushed (woken by its subject)' : ''}</dd></div>
      <div class="kv"><dt>default cadence</dt><dd>${p.default_every || '—'}</dd></div>
      <div class="kv"><dt>capabilities</dt><dd>${p.capabilities.length ? p.capabilities.map((c) => html`<span class="tag">${c}</span>`) : html`<span class="muted">none</span>`}</dd></div>
      <div class="kv"><dt>observable</dt><dd>${p.observable ? 'yes' : html`<span class="bad">no: set ${p.setting}</span>`}</dd></div>
    </dl>
    <h2>Grants</h2><${Json} v=${p.grants}/>
    <h2>Problems</h2>${problems.length ? html`<ul>${problems.map((x) => html`<li><strong>${x.rule}</strong> ${x.error}</li>`)}</ul>` : html`<${Empty}>None.</${Empty}>`}
    <h2>Faults and call latency</h2>
    ${k ? html`<dl class="facts">
      <div class="kv"><dt>probes</dt><dd>${Object.entries(k.probes).map(([r, n]) => html`<span class="tag">${r} ${n}</span>`)}</dd></div>
      <div class="kv"><dt>faults</dt><dd>${Object.keys(k.faults).length ? Object.entries(k.faults).map(([r, n]) => html`<span class="tag bad">${r} ${n}</span>`) : 'none'}</dd></div>
      <div class="kv"><dt>observe calls</dt><dd>${k.calls}, mean ${seconds(k.call_mean_seconds)}, p99 ≤ ${seconds(k.call_p99_seconds)}</dd></div>
      <div class="kv"><dt>probe lag p99</dt><dd>≤ ${seconds(k.lag_p99_seconds)}</dd></div></dl>`
      : oerr ? html`<${Problem} err=${oerr} onSignIn=${auth}/>` : html`<${Empty}>No calls since the host started.</${Empty}>`}
    <h2>Params schema</h2><${Json} v=${p.params_schema}/>
    ${p.example ? html`<h2>Example params</h2><${Json} v=${p.example}/>` : ''}
    <p><a class="button" href=${'#/register?kind=' + encodeURIComponent(p.kind)}>Register a ${p.kind} watch</a></p>
  </section>`;
}

// ---- register ----
function Register({ auth, query }) {
  const [{ data, err }] = useLoad(() => api('GET', '/plugins'), []);
  if (query.recipient) sessionStorage.setItem('vigil.recipient', query.recipient);
  return html`<section><h1>Register a watch</h1>
    <${Problem} err=${err} onSignIn=${auth}/>
    ${data && data.plugins.length === 0 ? html`<${Empty}>No kinds are loaded: add a plugin and reload.</${Empty}>` : ''}
    ${data && data.plugins.length > 0 ? html`<${RegisterForm} kinds=${data.plugins} initialKind=${query.kind} go=${go} onAuth=${auth}/>` : ''}
  </section>`;
}

// ---- dead letters ----
function DeadLetters({ auth }) {
  const now = useNow();
  const [afters, setAfters] = useState([0]);
  const after = afters[afters.length - 1];
  const [{ data, err }] = useLoad(() => api('GET', '/fetch/dead-letters' + q({ after, limit: 50 })), [after]);
  return html`<section><h1>Fetch dead letters</h1>
    <p class="muted">Fetches a plugin asked for that the issuer refused before anything was sent.</p>
    <${Problem} err=${err} onSignIn=${auth}/>
    ${data && data.dead_letters.length === 0 ? html`<${Empty}>${after ? 'No more.' : 'None: every fetch a plugin asked for was allowed.'}</${Empty}>` : ''}
    ${data && data.dead_letters.length > 0 ? html`<div class="scroll"><table><thead><tr><th>seq</th><th>at</th><th>kind</th><th>request</th><th>reason</th><th>message</th></tr></thead>
      <tbody>${data.dead_letters.map((d) => html`<tr><td>${d.seq}</td><td><${Time} t=${d.occurred_at} now=${now}/></td><td>${d.kind}</td><td><code>${d.method} ${d.url}</code></td><td>${d.reason}</td><td>${d.message}</td></tr>`)}</tbody></table></div>` : ''}
    <nav class="pager"><button disabled=${afters.length === 1} onClick=${() => setAfters(afters.slice(0, -1))}>Previous</button>
      <button disabled=${!data || data.dead_letters.length < 50} onClick=${() => setAfters([...afters, data.next])}>Next</button></nav>
  </section>`;
}

// ---- observe ----
function Observe({ auth, query }) {
  const now = useNow();
  const [scope, setScope] = useState(query.scope || sessionStorage.getItem('vigil.scope') || '');
  const [st, setSt] = useState('');
  const [shown, setShown] = useState(query.scope || sessionStorage.getItem('vigil.scope') || '');
  const [{ data, err }] = useLoad(() => shown ? api('GET', '/scopes/' + encodeURIComponent(shown) + '/work' + q({ state: st })) : Promise.resolve(null), [shown, st], 10000);
  const [open, setOpen] = useState(null);
  const [{ data: work, err: werr }] = useLoad(() => open ? api('GET', '/work/' + encodeURIComponent(open)) : Promise.resolve(null), [open]);
  const [{ data: scopes, err: serr }] = useLoad(() => api('GET', '/scopes'), []);
  const show = (name) => { setScope(name); sessionStorage.setItem('vigil.scope', name); setShown(name); };
  const submit = (e) => { e.preventDefault(); show(scope); };
  return html`<section><h1>Observe: scopes, threads and Work</h1>
    <h2>Scopes</h2>
    <${Problem} err=${serr} onSignIn=${auth}/>
    ${scopes && scopes.scopes.length === 0 ? html`<${Empty}>No scopes are configured: see <code>scopes:</code> in the host's config file (docs/observe.md).</${Empty}>` : ''}
    ${scopes && scopes.scopes.length > 0 ? html`<div class="scroll"><table><thead><tr><th>scope</th><th>sources (→ Work when routed)</th><th>your token</th></tr></thead>
      <tbody>${scopes.scopes.map((sc) => html`<tr><td>${sc.may_read ? html`<button class="linklike" onClick=${() => show(sc.name)}>${sc.name}</button>` : sc.name}</td>
        <td>${sc.sources.length ? sc.sources.map((x) => html`<span class="tag">${x.name}${x.routed ? ' → Work' : ''}</span>`) : html`<span class="muted">none</span>`}</td>
        <td>${sc.may_read ? 'reads its Work' : html`<span class="muted">may not read its Work</span>`}</td></tr>`)}</tbody></table></div>` : ''}
    <h2>Work</h2>
    <form class="toolbar" onSubmit=${submit}><label for="scope">Scope</label><input id="scope" value=${scope} onInput=${(e) => setScope(e.target.value)} placeholder="support"/>
      <label for="wkstate">State</label><select id="wkstate" value=${st} onChange=${(e) => setSt(e.target.value)}>${['', 'open', 'claimed', 'done'].map((s) => html`<option value=${s}>${s || 'all'}</option>`)}</select>
      <button type="submit">Show</button></form>
    <${Problem} err=${err} onSignIn=${auth}/>
    ${!shown ? html`<${Empty}>Name a scope to see the threads observed there and the Work they became.</${Empty}>` : ''}
    ${data && data.work.length === 0 ? html`<${Empty}>No Work in ${shown}${st ? ' ' + st : ''}.</${Empty}>` : ''}
    ${data && data.work.length > 0 ? html`<div class="scroll"><table><thead><tr><th>title</th><th>thread</th><th>state</th><th>inputs</th><th>claimed by</th><th>created</th></tr></thead>
      <tbody>${data.work.map((w) => html`<tr><td><button class="linklike" onClick=${() => setOpen(w.id)}>${w.title || w.id}</button></td><td><code>${w.thread_key}</code></td><td><${State} s=${w.state}/></td><td>${w.consumed}/${w.input_count}</td><td>${w.claimed_by || '—'}</td><td><${Time} t=${w.created_at} now=${now}/></td></tr>`)}</tbody></table></div>` : ''}
    <${Problem} err=${werr} onSignIn=${auth}/>
    ${work ? html`<h2>Work ${work.title || work.id}</h2><ol class="timeline">${(work.inputs || []).map((i) => html`<li><${Time} t=${i.recorded_at} now=${now}/> <strong>${i.source}</strong> ${i.reporter ? html`<span class="muted">by ${i.reporter}</span>` : ''} ${i.text}</li>`)}</ol>` : ''}
  </section>`;
}

// ---- cluster ----
function Cluster({ auth }) {
  const now = useNow();
  const [{ data, err }] = useLoad(() => api('GET', '/cluster'), [], 15000);
  return html`<section><h1>Cluster</h1>
    <${Problem} err=${err} onSignIn=${auth}/>
    ${data ? html`<p>Mode <strong data-testid="cluster-mode">${data.mode}</strong>. ${data.note || ''}</p>
      <div class="scroll"><table><thead><tr><th>node</th><th>address</th><th>started</th><th>plugin set digest</th></tr></thead>
      <tbody>${data.nodes.map((n) => html`<tr><td>${n.name} ${n.self ? html`<span class="tag">this node</span>` : ''}<br/><code class="small">${n.id}</code></td><td><code>${n.address}</code></td><td><${Time} t=${n.started_at} now=${now}/></td><td><code class="hash">${n.plugin_set_digest}</code>${n.refused ? html` <span class="tag">refused: another plugin set, holds nothing</span>` : ''}</td></tr>`)}</tbody></table></div>
      ${data.jobs && data.jobs.length ? html`<h2>Cluster-wide jobs</h2><ul>${data.jobs.map((j) => html`<li>${j.id}: ${j.owner || 'nobody yet'}${j.renewed_at ? html`, renewed <${Time} t=${j.renewed_at} now=${now}/>` : ''}</li>`)}</ul>` : ''}
      <h2>Partitions</h2>${data.partitions.length ? html`<ul>${data.partitions.map((p) => html`<li>${p.id}: ${p.owner || 'nobody yet'}${p.renewed_at ? html`, renewed <${Time} t=${p.renewed_at} now=${now}/>` : ''}</li>`)}</ul>` : html`<${Empty}>None: this node owns everything.</${Empty}>`}` : ''}
  </section>`;
}

// ---- the app ----
const NAV = [['/', 'Overview'], ['/recipients', 'Recipients'], ['/register', 'Register'], ['/plugins', 'Plugins'], ['/dead-letters', 'Dead letters'], ['/observe', 'Observe'], ['/cluster', 'Cluster']];

function App() {
  const [route, setRoute] = useState(location.hash);
  const [signIn, setSignIn] = useState(null);
  const [token, setTok] = useState(getToken());
  const main = useRef();
  useEffect(() => {
    const on = () => { setRoute(location.hash); if (main.current) main.current.focus(); };
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  const auth = useCallback(() => setSignIn({ refused: '' }), []);
  const done = async (t) => {
    const before = getToken();
    setToken(t);
    try {
      await api('GET', '/plugins');
      setSignIn(null); setTok(t);
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) { setToken(before); setSignIn({ refused: 'That token was refused: ' + e.message }); return; }
      setSignIn(null); setTok(t);
    }
  };
  const [path, query] = (() => {
    const [p, qs] = route.replace(/^#/, '').split('?');
    return [p || '/', Object.fromEntries(new URLSearchParams(qs || ''))];
  })();
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  let page;
  switch (parts[0]) {
    case undefined: page = html`<${Overview} auth=${auth}/>`; break;
    case 'recipients': page = parts[1] ? html`<${RecipientPage} id=${parts[1]} auth=${auth} key=${parts[1] + token}/>` : html`<${Recipients} auth=${auth} key=${token}/>`; break;
    case 'watches': page = html`<${WatchPage} id=${parts[1]} auth=${auth} key=${parts[1] + token}/>`; break;
    case 'plugins': page = parts[1] ? html`<${PluginPage} kind=${parts[1]} auth=${auth} key=${parts[1] + token}/>` : html`<${Plugins} auth=${auth} key=${token}/>`; break;
    case 'register': page = html`<${Register} auth=${auth} query=${query} key=${token + route}/>`; break;
    case 'dead-letters': page = html`<${DeadLetters} auth=${auth} key=${token}/>`; break;
    case 'observe': page = html`<${Observe} auth=${auth} query=${query} key=${token}/>`; break;
    case 'cluster': page = html`<${Cluster} auth=${auth} key=${token}/>`; break;
    default: page = html`<section><h1>No such page</h1><p><a href="#/">Back to the overview</a></p></section>`;
  }
  const current = '/' + (parts[0] || '');
  return html`<a class="skip" href="#main" onClick=${(e) => { e.preventDefault(); main.current.focus(); }}>Skip to the content</a>
    <header><a class="brand" href="#/">vigil</a>
      <nav aria-label="pages">${NAV.map(([p, name]) => html`<a href=${'#' + p} aria-current=${current === p ? 'page' : undefined}>${name}</a>`)}</nav>
      <span class="who">${token ? html`<button onClick=${() => { setToken(''); setTok(''); }}>Forget the token</button>` : html`<button onClick=${auth}>Enter a token</button>`}</span>
    </header>
    <main id="main" tabindex="-1" ref=${main} key=${token}>${page}</main>
    ${signIn ? html`<${SignIn} refused=${signIn.refused} onDone=${done} onCancel=${() => setSignIn(null)}/>` : ''}`;
}

const root = document.getElementById('app');
root.textContent = '';
render(html`<${App}/>`, root);
