// The console in a real browser: Debian's chromium driven by
// playwright-core, against the vigil serve processes the Go test
// (internal/console/e2e_test.go) started and seeded. It prints one line
// "FIGURES {json}" with what it measured; any failed step throws.
//
// Environment: VIGIL_OPEN (a host with no tokens), VIGIL_LOCKED (a host
// with tokens), VIGIL_TOKEN (an admin's token of the locked host),
// VIGIL_AGENT_TOKEN (a token there without the operator role), VIGIL_SEED
// (JSON: the ids the Go test made), VIGIL_CHROMIUM (the browser),
// VIGIL_CONSOLE_SCREENSHOTS (a directory: write screenshots there),
// VIGIL_CONSOLE_BENCH (the bulk recipient's id: measure its page).
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import path from 'node:path';

const open = process.env.VIGIL_OPEN;
const locked = process.env.VIGIL_LOCKED;
const token = process.env.VIGIL_TOKEN;
const seed = JSON.parse(process.env.VIGIL_SEED || '{}');
const shots = process.env.VIGIL_CONSOLE_SCREENSHOTS || '';
const bulk = process.env.VIGIL_CONSOLE_BENCH || '';
const figures = {};
const T = 30_000;

const step = (name) => console.log('step: ' + name);
const inFuture = (s) => new Date(Date.now() + s * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

async function apiCall(base, method, p, body, tok) {
  const h = { 'Content-Type': 'application/json' };
  if (tok) h.Authorization = 'Bearer ' + tok;
  const r = await fetch(base + '/api/v1' + p, { method, headers: h, body: body ? JSON.stringify(body) : undefined });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

const browser = await chromium.launch({ executablePath: process.env.VIGIL_CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
const outside = [];
const pageErrors = [];
async function newPage(width) {
  const ctx = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(T);
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('request', (r) => { const u = new URL(r.url()); if (u.host !== new URL(open).host && u.host !== new URL(locked).host) outside.push(r.url()); });
  page.on('console', (m) => { if (m.type() === 'error' && !/401|403|404|422|409/.test(m.text())) console.log('console error: ' + m.text()); });
  return page;
}
async function shot(page, name) {
  if (!shots) return;
  for (const w of [1280, 390]) {
    await page.setViewportSize({ width: w, height: 900 });
    await page.waitForTimeout(150);
    await page.screenshot({ path: path.join(shots, `${name}-${w}.png`), fullPage: w === 390 ? false : true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

try {
  // ---- first load: size and time to interactive ----
  step('first load');
  {
    const page = await newPage(1280);
    const t0 = Date.now();
    await page.goto(open + '/#/');
    await page.getByTestId('watches-pending').waitFor();
    const m = await page.evaluate(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      const res = performance.getEntriesByType('resource');
      const assets = res.filter((r) => new URL(r.name).pathname.startsWith('/console/'));
      return {
        interactive_ms: Math.round(performance.now()),
        transferred_bytes: Math.round(nav.transferSize + assets.reduce((s, r) => s + r.transferSize, 0)),
        decoded_bytes: Math.round(nav.decodedBodySize + assets.reduce((s, r) => s + r.decodedBodySize, 0)),
        requests: 1 + res.length,
        document_ms: Math.round(nav.responseEnd),
        modules_ms: Math.round(Math.max(...assets.map((r) => r.responseEnd))),
        dom_content_loaded_ms: Math.round(nav.domContentLoadedEventEnd),
        overview_request_ms: Math.round((res.find((r) => r.name.includes('/api/v1/overview')) || {}).responseEnd || 0),
      };
    });
    m.wall_ms = Date.now() - t0;
    figures.first_load = m;
    // A second load revalidates: 304s, no asset bodies.
    await page.reload();
    await page.getByTestId('watches-pending').waitFor();
    figures.second_load_interactive_ms = await page.evaluate(() => Math.round(performance.now()));
    // Pending by kind, counted with the states: every pending watch is a
    // timer here.
    assert.equal(await page.getByTestId('pending-kind-timer').textContent(), await page.getByTestId('watches-pending').textContent());
    // The store's disk: room, so writes are taken and no banner.
    assert.equal((await page.getByTestId('storage-writes').textContent()).trim(), 'taken');
    assert.equal(await page.getByTestId('storage-full').count(), 0);
    await shot(page, 'overview');
    // Keyboard: the first Tab reaches the skip link, and it is visible.
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.className), 'skip');
    assert.ok(await page.evaluate(() => document.activeElement.getBoundingClientRect().left >= 0), 'the focused skip link is off screen');
    // 390 px: nothing wider than the screen but the tables' own scroll.
    await page.setViewportSize({ width: 390, height: 800 });
    await page.waitForTimeout(100);
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 391, `the overview is ${wide} px wide at 390`);
    // The network down: a page that loads once (a plugin's) says it is
    // retrying, and shows its data once the host answers again.
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.context().setOffline(true);
    await page.evaluate(() => { location.hash = '#/plugins/timer'; });
    await page.getByText('The host does not answer.').waitFor();
    await page.context().setOffline(false);
    await page.getByText('The host does not answer.').waitFor({ state: 'detached' });
    await page.getByTestId('plugin-sha256').waitFor();
    await page.context().close();
  }

  // ---- a full disk: the overview says writes are refused ----
  // The host's own answer with its storage read-only (as a data
  // directory short of space makes it; cmd/vigil's
  // TestAFullDiskIsAnAnswerNotACrash fills a real one).
  step('a full disk: the banner');
  {
    const p = await newPage(1280);
    await p.route('**/api/v1/overview', async (route) => {
      const r = await route.fetch();
      const o = await r.json();
      assert.ok(o.storage, 'the overview has no storage');
      o.storage = { ...o.storage, free_bytes: 900 * 1024, needed_bytes: 1324 * 1024, read_only: true };
      await route.fulfill({ response: r, json: o });
    });
    await p.goto(open + '/#/');
    const banner = p.getByTestId('storage-full');
    await banner.waitFor();
    const text = await banner.textContent();
    assert.match(text, /Writes are refused/);
    assert.match(text, /900\.0 KiB free; writes need 1\.3 MiB/);
    assert.match(text, /507 insufficient_storage/);
    assert.equal((await p.getByTestId('storage-writes').textContent()).trim(), 'refused');
    await p.context().close();
  }

  const page = await newPage(1280);

  // ---- register a timer through the form ----
  step('register: a params error on its field');
  await page.goto(open + '/#/register?kind=timer');
  await page.locator('#f-params_at').waitFor();
  await page.locator('#f-recipient_id').fill('agent-1');
  await page.locator('#f-params_at').fill('9999-12-31T23:59:59Z');
  await page.getByRole('button', { name: 'Register the watch' }).click();
  const fieldErr = page.locator('#f-params_at-err');
  await fieldErr.waitFor();
  assert.match(await fieldErr.textContent(), /beyond the last instant/);
  assert.equal(await page.locator('#f-params_at').getAttribute('aria-invalid'), 'true');
  await shot(page, 'register-error');

  step('register: the timer pending, then fired without a reload');
  await page.locator('#f-params_at').fill(inFuture(3));
  await page.keyboard.press('Enter');
  await page.waitForURL(/#\/watches\//);
  const state = page.getByTestId('watch-state');
  await state.waitFor();
  assert.equal((await state.textContent()).trim(), 'pending');
  const navs = await page.evaluate(() => performance.getEntriesByType('navigation').length);
  await page.getByTestId('watch-state').getByText('fired').waitFor({ timeout: 30_000 });
  assert.equal(await page.evaluate(() => performance.getEntriesByType('navigation').length), navs, 'the page was reloaded');
  await page.locator('ol.timeline').getByText(/message #\d+/).waitFor();
  await shot(page, 'watch');

  // ---- the mailbox updates live ----
  step('mailbox: a new message appears without a reload');
  await page.goto(open + '/#/recipients/agent-1');
  await page.locator('.live').getByText('live').waitFor();
  const rows = page.locator('table.mailbox tbody tr');
  await rows.first().waitFor();
  const before = await rows.count();
  const made = await apiCall(open, 'POST', '/watches', { kind: 'timer', params: { at: inFuture(1) }, recipient: { id: 'agent-1' } });
  assert.equal(made.status, 201);
  await page.locator(`table.mailbox tbody tr td a[href="#/watches/${made.body.id}"]`).waitFor();
  assert.equal(await rows.count(), before + 1);
  await shot(page, 'recipient');

  // ---- a mailbox larger than the page keeps: older pages from the API ----
  if (seed.window) {
    step('mailbox: the page keeps the newest 500, reads older pages');
    const p = await newPage(1280);
    await p.goto(open + '/#/recipients/' + seed.window);
    await p.locator('.pager span').getByText('(600)').waitFor();
    await p.locator('table.mailbox tbody tr[data-seq="600"]').waitFor();
    await p.getByRole('button', { name: 'Last' }).first().click();
    await p.locator('table.mailbox tbody tr[data-seq="1"]').waitFor();
    const seqs = await p.locator('table.mailbox tbody tr').evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.seq)));
    assert.deepEqual([seqs.length, seqs[0], seqs[seqs.length - 1]], [50, 50, 1]);
    const held = await p.evaluate(() => window.__vigilMailboxHeldMax);
    assert.ok(held > 0 && held <= 550, `the page held ${held} of 600 messages (at most 550)`);
    // A message arriving leaves the older page where it was; the first
    // page shows it.
    const made = await apiCall(open, 'POST', '/watches', { kind: 'timer', params: { at: inFuture(1) }, recipient: { id: seed.window } });
    assert.equal(made.status, 201);
    await p.locator('.live[data-end="601"]').waitFor({ timeout: 30_000 });
    const still = await p.locator('table.mailbox tbody tr').evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.seq)));
    assert.deepEqual([still.length, still[0], still[still.length - 1]], [50, 50, 1], 'the older page slid as a message arrived');
    await p.getByRole('button', { name: 'First' }).first().click();
    await p.locator('table.mailbox tbody tr[data-seq="601"]').waitFor();
    await p.context().close();
  }

  // ---- cancel another watch: Escape keeps it, Enter cancels ----
  step('cancel a watch');
  await page.goto(open + '/#/watches/' + seed.cancel);
  await page.getByTestId('watch-state').getByText('pending').waitFor();
  await page.getByRole('button', { name: 'Cancel this watch' }).click();
  await page.locator('dialog[open]').waitFor();
  await page.keyboard.press('Escape');
  await page.locator('dialog[open]').waitFor({ state: 'detached' });
  assert.equal((await page.getByTestId('watch-state').textContent()).trim(), 'pending');
  await page.getByRole('button', { name: 'Cancel this watch' }).click();
  await page.locator('dialog[open]').waitFor();
  await page.keyboard.press('Enter');
  await page.getByTestId('watch-state').getByText('cancelled').waitFor();

  // ---- pause a recipient, told how many watches it cancels ----
  step('pause a recipient');
  await page.goto(open + '/#/recipients/agent-2');
  await page.getByRole('button', { name: 'Pause' }).click();
  const count = page.getByTestId('pause-count');
  await count.waitFor();
  assert.equal((await count.textContent()).trim(), String(seed.agent2Pending));
  await page.locator('dialog[open]').getByRole('button', { name: 'Pause' }).click();
  await page.locator('h1 .state-paused').waitFor();
  const rec = await apiCall(open, 'GET', '/recipients/agent-2');
  assert.equal(rec.body.status, 'paused');
  const left = await apiCall(open, 'GET', '/watches?recipient=agent-2&state=pending');
  assert.equal(left.body.watches.length, 0);
  await page.getByRole('button', { name: 'Resume' }).click();
  await page.locator('h1 .state-running').waitFor();

  // ---- a plugin's details ----
  step("a plugin's details");
  await page.goto(open + '/#/plugins');
  await page.getByRole('link', { name: 'timer', exact: true }).click();
  await page.locator('h1').getByText('timer').waitFor();
  assert.match((await page.getByTestId('plugin-sha256').textContent()).trim(), /^[0-9a-f]{64}$/);
  await page.getByText('observe calls').waitFor();
  await shot(page, 'plugin');
  await page.goto(open + '/#/plugins');
  await page.getByRole('button', { name: 'Reload plugins' }).click();
  await page.getByRole('status').getByText(/\d+ plugins loaded, \d+ problems/).waitFor();
  await page.goto(open + '/#/observe');
  await page.getByText('No scopes are configured').waitFor();

  assert.equal((await (await page.goto(open + '/#/cluster'), page.getByTestId('cluster-mode')).textContent()).trim(), 'single');
  await page.getByText('None: this node owns everything.').waitFor(); // partitions is [], never null
  await page.context().close();

  // ---- tokens: refused with a wrong one, signed in with the right one ----
  step('sign in');
  {
    const p = await newPage(1280);
    await p.goto(locked + '/#/');
    await p.getByText('A token is needed').waitFor();
    await p.getByRole('button', { name: 'Enter a token' }).first().click();
    await p.locator('#token').fill('not-the-token-at-all');
    await p.keyboard.press('Enter');
    await p.locator('dialog[open]').getByText('That token was refused').waitFor();
    assert.equal(await p.evaluate(() => sessionStorage.getItem('vigil.token')), null);
    await p.locator('#token').fill(token);
    await p.keyboard.press('Enter');
    await p.locator('dialog[open]').waitFor({ state: 'detached' });
    await p.getByTestId('watches-pending').waitFor();
    assert.ok(!p.url().includes(token), 'the token is in the URL');
    await p.context().close();
  }
  step('a 403 names the grant that is missing');
  {
    const p = await newPage(1280);
    await p.goto(locked + '/#/');
    await p.getByText('A token is needed').waitFor();
    await p.getByRole('button', { name: 'Enter a token' }).first().click();
    await p.locator('#token').fill(process.env.VIGIL_AGENT_TOKEN);
    await p.keyboard.press('Enter');
    const refusal = p.getByRole('alert').filter({ hasText: 'Your token may not do this' });
    await refusal.waitFor();
    assert.match(await refusal.textContent(), /may not .*operator/);
    await p.context().close();
  }

  // ---- the bulk recipient: 10,000 watches, 10,000 messages ----
  if (bulk) {
    step('bulk recipient');
    const p = await newPage(1280);
    const t0 = Date.now();
    await p.goto(open + '/#/recipients/' + bulk);
    await p.locator('table.mailbox tbody tr').first().waitFor();
    const firstPaint = Date.now() - t0;
    await p.locator('.pager span').getByText('(10000)').waitFor({ timeout: 120_000 });
    const allIn = Date.now() - t0;
    const dom = await p.evaluate(() => ({ nodes: document.getElementsByTagName('*').length, mailRows: document.querySelectorAll('table.mailbox tbody tr').length, watchRows: document.querySelectorAll('table:not(.mailbox) tbody tr').length }));
    // The page holds the newest 500 and the page shown (50), never all
    // 10,000: the most it ever held, over the whole stream.
    const held = await p.evaluate(() => ({ now: window.__vigilMailboxHeld, max: window.__vigilMailboxHeldMax }));
    assert.ok(held.max > 0 && held.max <= 550, `the page held ${held.max} messages (at most 550)`);
    const rowSeqs = () => p.locator('table.mailbox tbody tr').evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.seq)));
    assert.deepEqual((await rowSeqs()).slice(0, 2), [10000, 9999]);
    const t1 = Date.now();
    await p.getByRole('button', { name: 'Older' }).first().click();
    await p.locator('.pager span').getByText('page 2 of').waitFor();
    const pageTurn = Date.now() - t1;
    assert.deepEqual((await rowSeqs()).slice(0, 1), [9950]);
    // The oldest page is outside the window: read from the API.
    const t2 = Date.now();
    await p.getByRole('button', { name: 'Last' }).first().click();
    await p.locator('table.mailbox tbody tr[data-seq="1"]').waitFor();
    const oldPageTurn = Date.now() - t2;
    const last = await rowSeqs();
    assert.equal(last.length, 50);
    assert.deepEqual([last[0], last[49]], [50, 1]);
    const heldAfter = await p.evaluate(() => window.__vigilMailboxHeldMax);
    assert.ok(heldAfter <= 550, `the page held ${heldAfter} messages after reading the oldest page`);
    await p.getByRole('button', { name: 'First' }).first().click();
    await p.locator('table.mailbox tbody tr[data-seq="10000"]').waitFor();
    const heap = await p.evaluate(() => performance.memory ? Math.round(performance.memory.usedJSHeapSize / 1e6) : null);
    figures.bulk = { first_rows_ms: firstPaint, all_messages_ms: allIn, page_turn_ms: pageTurn, old_page_turn_ms: oldPageTurn, dom_nodes: dom.nodes, mailbox_rows: dom.mailRows, watch_rows: dom.watchRows, js_heap_mb: heap, held_max: heldAfter };
    await p.context().close();
  }

  assert.deepEqual(outside, [], 'requests to another host');
  assert.deepEqual(pageErrors, [], 'errors in the page');
  console.log('FIGURES ' + JSON.stringify(figures));
} finally {
  await browser.close();
}
