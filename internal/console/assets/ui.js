// Shared pieces of the console's pages: the template tag, times, error
// and empty states, the confirm dialog and a pager.
import { h } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';
import { ApiError, NetworkError } from './api.js';

export const html = htm.bind(h);

// useNow re-renders every period ms, for relative times.
export function useNow(period = 5000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => { const t = setInterval(() => setNow(Date.now()), period); return () => clearInterval(t); }, [period]);
  return now;
}

export function relative(t, now = Date.now()) {
  if (!t) return '—';
  const d = (new Date(t).getTime() - now) / 1000;
  const a = Math.abs(d);
  let s;
  if (a < 1) return 'now';
  if (a < 60) s = Math.round(a) + ' s';
  else if (a < 3600) s = Math.round(a / 60) + ' min';
  else if (a < 86400) s = Math.round(a / 3600) + ' h';
  else s = Math.round(a / 86400) + ' d';
  return d < 0 ? s + ' ago' : 'in ' + s;
}

// Time is a relative time with the exact instant in its title (hover) and
// datetime attribute. now (from useNow) only makes the page render again;
// the time is taken at each render, so a fresh message never reads "in 1 s".
export function Time({ t }) {
  if (!t) return html`<span class="muted">—</span>`;
  const exact = new Date(t).toISOString();
  return html`<time datetime=${exact} title=${exact} tabindex="0">${relative(t, Date.now())}</time>`;
}

export function seconds(s) {
  if (!s) return '0';
  if (s < 0.001) return (s * 1e6).toFixed(0) + ' µs';
  if (s < 1) return (s * 1000).toFixed(s < 0.01 ? 1 : 0) + ' ms';
  return s.toFixed(s < 10 ? 2 : 0) + ' s';
}

// bytes formats a byte count: KiB, MiB or GiB with one decimal.
export function bytes(n) {
  if (n >= 1 << 30) return (n / (1 << 30)).toFixed(1) + ' GiB';
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + ' MiB';
  return (n / 1024).toFixed(1) + ' KiB';
}

// Problem says what went wrong and what to do about it.
export function Problem({ err, onSignIn }) {
  if (!err) return null;
  if (err instanceof NetworkError) {
    return html`<div class="problem" role="alert"><strong>The host does not answer.</strong> Retrying; check that <code>vigil serve</code> is running. <span class="muted">${err.message}</span></div>`;
  }
  if (err instanceof ApiError) {
    if (err.status === 401) {
      return html`<div class="problem" role="alert"><strong>A token is needed.</strong> This host has tokens configured: enter yours.
        ${onSignIn ? html` <button onClick=${onSignIn}>Enter a token</button>` : ''}</div>`;
    }
    if (err.status === 403) {
      return html`<div class="problem" role="alert"><strong>Your token may not do this.</strong> ${err.message}. Ask the operator for that grant, or enter another token.</div>`;
    }
    return html`<div class="problem" role="alert"><strong>${err.code}</strong>: ${err.message}${err.field ? html` <span class="muted">(${err.field})</span>` : ''}${err.setting ? html` <span class="muted">setting: ${err.setting}</span>` : ''}</div>`;
  }
  return html`<div class="problem" role="alert">${String(err)}</div>`;
}

export function Empty({ children }) {
  return html`<p class="empty">${children}</p>`;
}

// Confirm is a modal dialog: Enter confirms (the confirm button has the
// focus), Escape cancels.
export function Confirm({ title, children, confirm = 'Confirm', onConfirm, onCancel }) {
  const ref = useRef();
  const ok = useRef();
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    if (ok.current) ok.current.focus();
    const cancel = (e) => { e.preventDefault(); onCancel(); };
    d.addEventListener('cancel', cancel);
    return () => d.removeEventListener('cancel', cancel);
  }, []);
  const submit = (e) => { e.preventDefault(); onConfirm(); };
  return html`<dialog ref=${ref} aria-labelledby="dlg-title">
    <form onSubmit=${submit}>
      <h2 id="dlg-title">${title}</h2>
      <div>${children}</div>
      <div class="buttons">
        <button type="button" onClick=${onCancel}>Cancel</button>
        <button type="submit" class="danger" ref=${ok}>${confirm}</button>
      </div>
    </form>
  </dialog>`;
}

export function Json({ v }) {
  return html`<pre class="json">${JSON.stringify(v, null, 2)}</pre>`;
}

export function State({ s }) {
  return html`<span class=${'state state-' + s}>${s}</span>`;
}
