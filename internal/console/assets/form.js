// A watch's registration form, generated from its kind's params schema
// (string, integer, number, boolean, enum, format date-time), with a raw
// JSON fallback for anything else; the API's admission errors are shown
// on the field they name.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './api.js';
import { html, Problem } from './ui.js';

// fieldsOf is the schema's flat properties a form can edit, or null when
// it needs the raw JSON editor (nested objects, arrays, no properties).
export function fieldsOf(schema) {
  if (!schema || schema.type !== 'object' || !schema.properties) return null;
  const req = new Set(schema.required || []);
  const out = [];
  for (const [name, p] of Object.entries(schema.properties)) {
    let type = p.type;
    if (Array.isArray(p.enum)) type = 'enum';
    else if (type === 'string' && p.format === 'date-time') type = 'date-time';
    if (!['string', 'integer', 'number', 'boolean', 'enum', 'date-time'].includes(type)) return null;
    out.push({ name, type, required: req.has(name), description: p.description || '', options: p.enum || [], dflt: p.default });
  }
  return out;
}

// valueOf turns a field's text into its JSON value; undefined leaves it
// out. A number that does not parse is sent as text, for the kind's
// admission to name.
function valueOf(f, v) {
  if (f.type === 'boolean') return v === true ? true : (v === false && f.required ? false : undefined);
  if (v === '' || v === undefined) return undefined;
  if (f.type === 'integer' || f.type === 'number') { const n = Number(v); return Number.isFinite(n) ? n : v; }
  if (f.type === 'enum') { const o = f.options.find((x) => String(x) === v); return o === undefined ? v : o; }
  return v;
}

const inFuture = (s) => new Date(Date.now() + s * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

export function RegisterForm({ kinds, initialKind, go, onAuth }) {
  const [kind, setKind] = useState(initialKind || (kinds[0] && kinds[0].kind) || '');
  const [detail, setDetail] = useState(null);
  const [values, setValues] = useState({});
  const [raw, setRaw] = useState('');
  const [useRaw, setUseRaw] = useState(false);
  const [recipient, setRecipient] = useState(sessionStorage.getItem('vigil.recipient') || '');
  const [every, setEvery] = useState('');
  const [expires, setExpires] = useState('');
  const [errors, setErrors] = useState({});
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!kind) return;
    let live = true;
    setDetail(null); setErrors({}); setErr(null);
    api('GET', '/plugins/' + encodeURIComponent(kind)).then((d) => {
      if (!live) return;
      setDetail(d);
      const fs = fieldsOf(d.params_schema);
      setUseRaw(!fs);
      const v = {};
      for (const f of fs || []) if (f.dflt !== undefined) v[f.name] = f.type === 'boolean' ? f.dflt : String(f.dflt);
      setValues(v);
      setRaw(JSON.stringify(d.example || {}, null, 2));
    }, (e) => live && setErr(e));
    return () => { live = false; };
  }, [kind]);

  const fields = detail ? fieldsOf(detail.params_schema) : null;
  const set = (name, v) => setValues({ ...values, [name]: v });

  const submit = async (e) => {
    e.preventDefault();
    setErrors({}); setErr(null);
    let params;
    if (useRaw || !fields) {
      try { params = JSON.parse(raw || '{}'); } catch (x) { setErrors({ params: 'not JSON: ' + x.message }); return; }
    } else {
      params = {};
      for (const f of fields) { const v = valueOf(f, values[f.name]); if (v !== undefined) params[f.name] = v; }
    }
    const body = { kind, params, recipient: { id: recipient } };
    if (every) body.every = every;
    if (expires) body.expires_at = expires;
    setBusy(true);
    try {
      sessionStorage.setItem('vigil.recipient', recipient);
      const w = await api('POST', '/watches', body);
      go('/watches/' + w.id);
    } catch (x) {
      if (x instanceof ApiError && x.status === 401) onAuth();
      if (x instanceof ApiError && x.field) {
        let f = x.field;
        if (f.startsWith('params.') && !useRaw && fields && fields.some((ff) => ff.name === f.slice(7).split(/[.[]/)[0])) f = 'params.' + f.slice(7).split(/[.[]/)[0];
        else if (f.startsWith('params')) f = useRaw || !fields ? 'params' : f;
        setErrors({ [f]: x.message });
        const el = document.getElementById('f-' + f.replace(/[^a-z0-9_-]/gi, '_'));
        if (el) el.focus();
        if (!document.getElementById('f-' + f.replace(/[^a-z0-9_-]/gi, '_'))) setErr(x);
      } else setErr(x);
    } finally { setBusy(false); }
  };

  const id = (f) => 'f-' + f.replace(/[^a-z0-9_-]/gi, '_');
  const fieldError = (f) => errors[f] ? html`<p class="field-error" id=${id(f) + '-err'} role="alert">${errors[f]}</p>` : null;
  const described = (f) => errors[f] ? id(f) + '-err' : undefined;

  return html`<form class="register" onSubmit=${submit} novalidate>
    <div class="field">
      <label for="f-kind">Kind</label>
      <select id="f-kind" value=${kind} onChange=${(e) => setKind(e.target.value)}>
        ${kinds.map((k) => html`<option value=${k.kind}>${k.kind}</option>`)}
      </select>
      ${detail ? html`<p class="hint">${detail.summary}${detail.default_every ? ' · checked every ' + detail.default_every : ''}</p>` : ''}
      ${fieldError('kind')}
    </div>
    <div class="field">
      <label for="f-recipient_id">Recipient</label>
      <input id="f-recipient_id" value=${recipient} onInput=${(e) => setRecipient(e.target.value)} placeholder="agent-1" autocomplete="off" aria-invalid=${!!errors['recipient.id']} aria-describedby=${described('recipient.id')}/>
      ${fieldError('recipient.id')}
    </div>
    ${detail && fields && !useRaw ? fields.map((f) => html`<div class="field">
      <label for=${id('params.' + f.name)}>${f.name}${f.required ? ' *' : ''}</label>
      ${f.type === 'boolean' ? html`<input type="checkbox" id=${id('params.' + f.name)} checked=${!!values[f.name]} onChange=${(e) => set(f.name, e.target.checked)} aria-invalid=${!!errors['params.' + f.name]} aria-describedby=${described('params.' + f.name)}/>`
        : f.type === 'enum' ? html`<select id=${id('params.' + f.name)} value=${values[f.name] || ''} onChange=${(e) => set(f.name, e.target.value)} aria-invalid=${!!errors['params.' + f.name]} aria-describedby=${described('params.' + f.name)}>
            <option value="">—</option>${f.options.map((o) => html`<option value=${String(o)}>${String(o)}</option>`)}</select>`
        : html`<input id=${id('params.' + f.name)} inputmode=${f.type === 'integer' || f.type === 'number' ? 'decimal' : undefined}
            placeholder=${f.type === 'date-time' ? 'RFC 3339, e.g. ' + inFuture(60) : ''} value=${values[f.name] || ''}
            onInput=${(e) => set(f.name, e.target.value)} aria-invalid=${!!errors['params.' + f.name]} aria-describedby=${described('params.' + f.name)}/>`}
      ${f.type === 'date-time' ? html`<span class="quick">${[10, 60, 3600].map((s) => html`<button type="button" onClick=${() => set(f.name, inFuture(s))}>+${s < 60 ? s + ' s' : s < 3600 ? s / 60 + ' min' : s / 3600 + ' h'}</button>`)}</span>` : ''}
      ${f.description ? html`<p class="hint">${f.description}</p>` : ''}
      ${fieldError('params.' + f.name)}
    </div>`) : ''}
    ${detail && (useRaw || !fields) ? html`<div class="field">
      <label for="f-params">Params (JSON)</label>
      <textarea id="f-params" rows="8" value=${raw} onInput=${(e) => setRaw(e.target.value)} aria-invalid=${!!errors.params} aria-describedby=${described('params')}></textarea>
      ${fieldError('params')}
    </div>` : ''}
    ${detail && fields ? html`<p><label><input type="checkbox" checked=${useRaw} onChange=${(e) => { setUseRaw(e.target.checked); if (e.target.checked) { const p = {}; for (const f of fields) { const v = valueOf(f, values[f.name]); if (v !== undefined) p[f.name] = v; } setRaw(JSON.stringify(p, null, 2)); } }}/> Edit the params as raw JSON</label></p>` : ''}
    <details><summary>Cadence and deadline</summary>
      <div class="field">
        <label for="f-every">Every</label>
        <input id="f-every" value=${every} onInput=${(e) => setEvery(e.target.value)} placeholder=${detail && detail.default_every ? detail.default_every : '30s'} aria-invalid=${!!errors.every} aria-describedby=${described('every')}/>
        ${fieldError('every')}
      </div>
      <div class="field">
        <label for="f-expires_at">Expires at</label>
        <input id="f-expires_at" value=${expires} onInput=${(e) => setExpires(e.target.value)} placeholder="RFC 3339; empty: the kind's deadline" aria-invalid=${!!errors.expires_at} aria-describedby=${described('expires_at')}/>
        ${fieldError('expires_at')}
      </div>
    </details>
    <${Problem} err=${err} onSignIn=${onAuth}/>
    <button type="submit" class="primary" disabled=${busy || !detail}>Register the watch</button>
  </form>`;
}
