// Properties of the console's stream parser (assets/api.js parseEvents),
// over random event streams cut into random chunks: what comes out is what
// went in, whatever the cuts, the line endings and the comments between.
// Run by internal/console's TestStreamParser (node --test).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseEvents } from '../assets/api.js';

// A small seeded generator, so a failure names the seed that found it.
function rng(seed) {
  let s = Math.imul(seed, 2654435761) >>> 0 || 1;
  const next = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 2 ** 32; };
  for (let i = 0; i < 8; i++) next(); // the first outputs of a small seed are small
  return next;
}
const pick = (r, xs) => xs[Math.floor(r() * xs.length)];

function randomStream(r) {
  const events = [];
  let wire = '';
  const eol = pick(r, ['\n', '\r\n']);
  for (let i = 0, n = Math.floor(r() * 12); i < n; i++) {
    if (r() < 0.3) wire += ': keep-alive' + eol + eol;
    const id = String(1 + Math.floor(r() * 1e6));
    const lines = [];
    for (let j = 0, m = 1 + Math.floor(r() * 3); j < m; j++) {
      lines.push(JSON.stringify({ seq: Number(id), text: pick(r, ['', 'a', 'é ü', 'x: y', ' lead', '{"n":1}', '日本']) }));
    }
    wire += 'id: ' + id + eol + 'event: message' + eol + lines.map((l) => 'data: ' + l + eol).join('') + eol;
    events.push({ id, event: 'message', data: lines.join('\n') });
  }
  return { events, wire };
}

function parseInChunks(wire, r) {
  const out = [];
  let buf = '';
  let i = 0;
  while (i < wire.length) {
    const n = 1 + Math.floor(r() * 40);
    buf += wire.slice(i, i + n);
    i += n;
    const { events, rest } = parseEvents(buf);
    out.push(...events);
    buf = rest;
  }
  return { out, rest: buf };
}

test('events survive any chunking', () => {
  for (let seed = 1; seed <= 2000; seed++) {
    const r = rng(seed);
    const { events, wire } = randomStream(r);
    const { out, rest } = parseInChunks(wire, r);
    assert.deepEqual(out, events, 'seed ' + seed);
    assert.equal(rest, '', 'seed ' + seed);
  }
});

test('an incomplete event waits in the rest', () => {
  const { events, rest } = parseEvents('id: 1\ndata: {"seq":1}\n\nid: 2\ndata: {"se');
  assert.equal(events.length, 1);
  assert.equal(rest, 'id: 2\ndata: {"se');
  assert.deepEqual(parseEvents(rest + 'q":2}\n\n').events, [{ id: '2', event: 'message', data: '{"seq":2}' }]);
});

test('a comment alone is no event', () => {
  assert.deepEqual(parseEvents(': open\n\n: keep-alive\n\n'), { events: [], rest: '' });
});
