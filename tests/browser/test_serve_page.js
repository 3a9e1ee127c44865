// The page of `vmscope serve` in headless Chromium (playwright-core, Debian's chromium): it
// loads from the server with no console error and no request that leaves the loopback
// server; the drill-down zooms by the wheel and keys until single kvm_exit slices are drawn
// and one is wider than 6 px; a click on it opens the details panel, whose reason, RIP and
// begin/end ns must be those of the slice the server sent, and which must be an interval of
// `vmscope vcpus --csv` and a reason of `vmscope exits --csv` over [begin, end] (independent
// commands); the event list holds the lines of `vmscope dump --from --to` of the view;
// Ctrl+F then Enter finds a guest thread by name (named by the caller from dump's lines); the
// tooltip of the exit shows the same; a click on an event line puts the cursor at its time;
// a range selected (shift+drag) shows its statistics and the exit histograms follow it, and
// two ranges stored with Shift+A/Shift+B are compared side by side, each against
// `vcpus --csv` (clipped) and `exits --csv` of its range.
// Speaks TAP. usage: node test_serve_page.js CHROMIUM URL THREAD VMSCOPE TRACE...
'use strict';
const fs = require('fs');
const { execFileSync } = require('child_process');
const { chromium } = require('playwright-core');

const [chromiumPath, url, thread, vmscope, ...traces] = process.argv.slice(2);
// how long the page may wait for one answer of the server (a window replays the traces)
const T = Number(process.env.VMS_BROWSER_TIMEOUT_MS || 30000);
// zoom steps (wheel or key) between two waits for the server's answer: on a large trace,
// where a window costs seconds, the page asks only for the view it ends at
const ZB = Number(process.env.VMS_BROWSER_ZOOM_BATCH || 1);
// a file:// URL: the static page of `vmscope html` within its budget, whose drill-down answers
// from the exact intervals it holds (no events, no findings there: serve has them)
const STATIC = url.startsWith('file:');
const OUT = process.env.VMS_BROWSER_OUT || (process.env.VMS_BUILD_DIR + '/test-tmp/browser');
let n = 0, failed = 0;
function ok(cond, name, diag) {
  n++;
  console.log((cond ? 'ok ' : 'not ok ') + n + ' - ' + name);
  if (!cond) { failed++; if (diag) console.log('# ' + String(diag).replace(/\n/g, '\n# ')); }
}

// sums from independent commands over [a, b): per (vcpu row, state) the ns of vcpus --csv
// clipped to it, per (vcpu row, reason) the count of exits --csv
function expectStats(a, b, traces) {
  const run = (args) => execFileSync(vmscope, args.concat(['--from', String(a), '--to', String(b)], traces),
    { stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 1 << 28 }).toString().split('\n').slice(1)
    .filter((l) => l).map((l) => l.split(','));
  const ns = {}, exits = {};
  for (const f of run(['vcpus', '--csv'])) {
    const d = Math.min(Number(f[3]), b) - Math.max(Number(f[2]), a);
    const k = f[0] + '/' + f[1] + '/' + f[5];
    if (d > 0) ns[k] = (ns[k] || 0) + d;
  }
  for (const f of run(['exits', '--csv'])) {
    const k = f[0] + '/' + f[1] + '/' + f[4];
    exits[k] = (exits[k] || 0) + Number(f[5]);
  }
  return { ns: ns, exits: exits };
}
// what a stats panel (a .rowstats block) shows: column col of the state and exit tables
async function panelNumbers(page, sel, col) {
  return page.$$eval(sel + ' .rowstats', (blocks, col) => blocks.map((b) => {
    const st = {}, ex = {};
    for (const tr of b.querySelectorAll('table.stats:not(.exits) tr[data-state]')) st[tr.dataset.state] = Number(tr.children[col].textContent);
    for (const tr of b.querySelectorAll('table.exits tr[data-reason]')) ex[tr.dataset.reason] = Number(tr.children[col].textContent);
    return { row: b.dataset.row, st: st, ex: ex };
  }), col);
}
function sameStats(blocks, exp, rows, which) {
  const byId = {};
  for (const r of rows) byId[r.id] = r;
  const ns = {}, ex = {};
  for (const b of blocks) {
    const r = byId[b.row];
    if (!r || r.kind !== 'vcpu') continue;
    for (const s in b.st) if (b.st[s]) ns[r.machine + '/' + r.vcpu + '/' + s] = b.st[s];
    for (const x in b.ex) if (b.ex[x]) ex[r.machine + '/' + r.vcpu + '/' + x] = b.ex[x];
  }
  const eq = (p, q) => JSON.stringify(Object.keys(p).sort().map((k) => [k, p[k]])) ===
    JSON.stringify(Object.keys(q).sort().map((k) => [k, q[k]]));
  return { ok: Object.keys(ns).length > 0 && eq(ns, exp.ns) && eq(ex, exp.exits),
    diag: which + ' page ' + JSON.stringify([ns, ex]).slice(0, 400) + '\nexpected ' + JSON.stringify(exp).slice(0, 400) };
}
// shift+drag selects a range: its statistics and the exit latency histograms follow it;
// Shift+A, a second range, Shift+B: the two compared side by side, with B - A
async function rangeChecks(page, box, exitAt, traces, waitData) {
  await page.keyboard.press('0');
  await waitData();
  await page.evaluate(() => window.vmsDrill.pick([]));   // every vCPU
  const drag = async (f0, f1) => {
    const x0 = box.x + 220 + (box.width - 220) * f0, x1 = box.x + 220 + (box.width - 220) * f1;
    await page.keyboard.down('Shift');
    await page.mouse.move(x0, box.y + 40);
    await page.mouse.down();
    await page.mouse.move((x0 + x1) / 2, box.y + 40);
    await page.mouse.move(x1, box.y + 40);
    await page.mouse.up();
    await page.keyboard.up('Shift');
    await page.waitForFunction(() => window.vmsDrill.rangeStats() !== null, null, { timeout: T });
    return page.evaluate(() => window.vmsDrill.range());
  };
  const rows = await page.evaluate(() => window.vmsDrill.rows());
  const a = await drag(0.2, 0.35);
  ok(a && a.b > a.a, 'shift+drag selects a range [' + (a && a.a) + ', ' + (a && a.b) + ')');
  const expA = expectStats(a.a, a.b, traces);
  const selShown = await panelNumbers(page, '#drill-selstats', 1);
  const c1 = sameStats(selShown, expA, rows, 'selection');
  ok(c1.ok, 'the selection\'s statistics: ns by state = vcpus --csv clipped, exits = exits --csv', c1.diag);
  const hist = await page.$$eval('#exits figure.hist', (f) => f.map((x) => [x.dataset.machine, x.dataset.reason, Number(x.dataset.count)]));
  const note = await page.textContent('#exits');
  const wantH = {};
  for (const k in expA.exits) { const [m, , r] = k.split('/'); wantH[m + '/' + r] = (wantH[m + '/' + r] || 0) + expA.exits[k]; }
  const gotH = {};
  for (const [m, r, c] of hist) gotH[m + '/' + r] = c;
  ok(note.includes('[' + a.a + ', ' + a.b + ')') && JSON.stringify(Object.entries(gotH).sort()) === JSON.stringify(Object.entries(wantH).sort()),
    'the exit latency histograms follow the selection, say so, and count exits --csv of it (' + hist.length + ' reasons)',
    JSON.stringify([gotH, wantH]).slice(0, 600));
  // who took the CPU follows the selection (served: report --from --to --json's steal)
  const stealGot = await page.$$eval('#steal table.steal', (t) => t.map((x) => [x.dataset.row,
    Array.from(x.querySelectorAll('tr[data-ns]')).map((tr) => tr.dataset.tid + '=' + tr.dataset.ns)]));
  const stealNote = await page.textContent('#steal');
  if (STATIC) {
    ok(stealNote.includes('[' + a.a + ', ' + a.b + ')') && stealNote.includes('vmscope serve'),
      'the static page says who took the CPU in the selection is known to serve');
  } else {
    const rep = JSON.parse(execFileSync(vmscope, ['report', '--json', '--from', String(a.a), '--to', String(a.b)].concat(traces),
      { stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 1 << 28 }).toString());
    const idOf = {};
    for (const r of rows) if (r.kind === 'vcpu') idOf[r.machine + '/' + r.vcpu] = r.id;
    const stealWant = [];
    for (const m of rep.machines) for (const v of (m.vcpus || [])) if (v.steal.length)
      stealWant.push([idOf[m.name + '/' + v.vcpu], v.steal.map((e) => (e.tid === null ? '' : e.tid) + '=' + e.ns)]);
    const key = (l) => JSON.stringify(l.slice().sort());
    // (kvm-hip24's host recorded no sched_switch: every vCPU's is unknown, and said so)
    const unseen = rep.machines.some((m) => (m.vcpus || []).some((v) => !v.preempt_visible));
    ok(stealNote.includes('[' + a.a + ', ' + a.b + ')') && key(stealGot) === key(stealWant) &&
      (stealWant.length > 0 || unseen) && unseen === stealNote.includes('Unknown for'),
      'who took the CPU follows the selection: report --from --to --json\'s steal (' + stealWant.length +
      ' vCPUs' + (unseen ? ', unknown where the host recorded no sched_switch' : '') + ')',
      JSON.stringify([stealGot, stealWant]).slice(0, 600));
  }
  await page.focus('#drill');
  await page.keyboard.press('Shift+A');
  const b = await drag(0.6, 0.8);
  await page.keyboard.press('Shift+B');
  await page.waitForFunction(() => window.vmsDrill.compared() !== null, null, { timeout: T });
  await page.waitForSelector('#drill-compare .rowstats', { timeout: T });
  const rg = await page.evaluate(() => window.vmsDrill.ranges());
  ok(rg[0].a === a.a && rg[0].b === a.b && rg[1].a === b.a && rg[1].b === b.b, 'Shift+A and Shift+B store the two ranges');
  const expB = expectStats(b.a, b.b, traces);
  const cA = sameStats(await panelNumbers(page, '#drill-compare', 1), expA, rows, 'A');
  const cB = sameStats(await panelNumbers(page, '#drill-compare', 3), expB, rows, 'B');
  const diff = await page.$$eval('#drill-compare .rowstats table.stats:not(.exits) tr[data-state]', (t) =>
    t.every((tr) => Number(tr.children[5].textContent) === Number(tr.children[3].textContent) - Number(tr.children[1].textContent)));
  const figs = await page.$$eval('#drill-compare .rowstats[data-row="' + exitAt.id + '"] figure.hist', (f) => f.length);
  ok(cA.ok && cB.ok && diff && figs >= 2, 'ranges A and B side by side: each = vcpus/exits --csv of its range, B - A, histograms (' + figs + ')',
    cA.diag + '\n' + cB.diag);
  // picked rows: the comparison shows those only
  await page.evaluate((id) => window.vmsDrill.pick([id]), exitAt.id);
  const shown = await page.$$eval('#drill-compare .rowstats', (b) => b.map((x) => x.dataset.row));
  ok(shown.length === 1 && shown[0] === exitAt.id, 'the comparison follows the picked rows (' + exitAt.id + ')', shown.join(','));
  await page.focus('#drill');
  await page.keyboard.press('Escape');
  const back = await page.evaluate(() => document.getElementById('exits').dataset.range === undefined &&
    document.getElementById('steal').dataset.range === undefined);
  ok(back, 'Escape drops the selection: the histograms and who took the CPU show the whole trace again');
}

(async () => {
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [], foreign = [];
  const origin = new URL(url).origin;
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  // the served page asks its loopback server only; the static one asks nothing at all
  page.on('request', (r) => {
    if (STATIC ? r.url().split('#')[0] !== url : !r.url().startsWith(origin + '/')) foreign.push(r.url());
  });
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForSelector('#drill[data-ready="1"]', { timeout: T });
  const waitData = async () => {
    await page.waitForFunction(() => {
      const d = window.vmsDrill.data(), v = window.vmsDrill.view();
      return d && d.from === Math.floor(v[0]) && d.to === Math.ceil(v[1]);
    }, null, { timeout: T });
  };
  await waitData();
  const all = await page.evaluate(() => window.vmsDrill.view());   // the whole trace
  // find a vCPU row with exits, and its first exit, from the server's whole-trace answer
  const exitAt = await page.evaluate(() => {
    const d = window.vmsDrill.data(), rows = window.vmsDrill.rows();
    for (let i = 0; i < rows.length; i++) {
      const r = d.byId[rows[i].id];
      if (r && r.exits && r.exits.count > 0) return { row: i, id: rows[i].id };
    }
    return null;
  });
  ok(exitAt !== null, 'a vCPU row with VM exits');
  // zoom by keys around the middle of the trace until exit slices are exact
  await page.focus('#drill');
  // the drill-down at the top of the viewport: the mouse reaches it there (coordinates are
  // the viewport's, and nothing scrolls while the test runs)
  await page.$eval('#drill', (e) => e.scrollIntoView({ block: 'start' }));
  const box = await (await page.$('#drill-canvas')).boundingBox();
  const midX = box.x + 220 + (box.width - 220) / 2;
  let exact = false, wheels = 0;
  for (let k = 0; k < 60 && !exact; k++) {
    for (let j = 0; j < ZB; j++) {
      if ((k * ZB + j) % 2 === 0) {   // the wheel, at the middle of the plot
        await page.mouse.move(midX, box.y + 40);
        await page.mouse.wheel(0, -100);
        wheels++;
      } else {
        await page.keyboard.press('+');
      }
    }
    await waitData();
    exact = await page.evaluate((id) => {
      const r = window.vmsDrill.data().byId[id];
      return !!(r && r.exits.exact && r.exits.slices.some((s) => s.end !== null));
    }, exitAt.id);
  }
  ok(exact && wheels > 0, 'zooming by wheel and keys reaches single kvm_exit slices');
  // the ended exit slice nearest the middle, zoomed by the wheel over it until it is wider
  // than 6 pixels
  const pick = () => page.evaluate((a) => {
    const d = window.vmsDrill.data(), v = window.vmsDrill.view();
    const r = d.byId[a.id];
    if (!r.exits.exact) return null;
    const W = document.getElementById('drill-canvas').clientWidth - 220;
    const mid = (v[0] + v[1]) / 2;
    let s = null;
    for (const x of r.exits.slices)
      if (x.end !== null && x.begin >= v[0] && x.end <= v[1] &&
          (!s || Math.abs((x.begin + x.end) / 2 - mid) < Math.abs((s.begin + s.end) / 2 - mid))) s = x;
    if (!s) return null;
    const x = 220 + ((s.begin + s.end) / 2 - v[0]) / (v[1] - v[0]) * W;
    return { x: x, y: 20 + a.row * 32 + 22 + 4, w: (s.end - s.begin) / (v[1] - v[0]) * W, s: s };
  }, exitAt);
  let target = await pick();
  for (let k = 0; k < 80 && target && target.w < 6; k++) {
    // the wheel keeps the time under the mouse in place: several turns stay on the slice,
    // as long as they do not overshoot 6 px by much
    const turns = Math.max(1, Math.min(ZB * 2, Math.floor(Math.log(6 / target.w) / Math.log(1.25))));
    await page.mouse.move(box.x + target.x, box.y + 40);
    for (let j = 0; j < turns; j++) await page.mouse.wheel(0, -100);
    await waitData();
    target = await pick();
  }
  ok(target !== null && target.w >= 6, 'an ended exit slice zoomed by the wheel to ' + (target && target.w.toFixed(1)) + ' px');
  if (target) {
    await page.mouse.move(box.x + target.x, box.y + target.y);
    await page.waitForSelector('#drill-tip:not([hidden])', { timeout: 5000 }).catch(() => {});
    const tipText = await page.textContent('#drill-tip');
    const s0 = target.s;
    ok(tipText.includes(s0.name) && tipText.includes(s0.begin + ' ns') && tipText.includes(s0.end + ' ns') &&
       tipText.includes(s0.guest_rip), 'the tooltip of the exit: reason, exact begin/end ns, guest RIP', tipText);
    await page.mouse.click(box.x + target.x, box.y + target.y);
    const det = await page.textContent('#drill-details');
    const s = target.s;
    ok(det.includes(s.name) && det.includes(s.begin + ' ns') && det.includes(s.end + ' ns') &&
       det.includes(s.guest_rip), 'the details panel: reason, exact begin/end ns, guest RIP',
       det);
    // the same exit in `vmscope vcpus --csv` of that window, for its vCPU: its intervals
    // cover [begin, end) exactly, out of guest mode all along (vmm, or halted then vmm for a
    // HLT: an independent command's numbers)
    const ri = await page.evaluate((i) => window.vmsDrill.rows()[i], exitAt.row);
    const csv = execFileSync(vmscope, ['vcpus', '--csv', '--from', String(s.begin), '--to',
      String(s.end)].concat(traces), { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
    const mine = csv.split('\n').slice(1).map((l) => l.split(',')).filter((f) => f.length > 5 &&
      f[0] === ri.machine && Number(f[1]) === ri.vcpu).map((f) => [Number(f[2]), Number(f[3]), f[5]]);
    const covers = mine.length > 0 && mine[0][0] === s.begin && mine[mine.length - 1][1] === s.end &&
      mine.every((x, k) => (k === 0 || x[0] === mine[k - 1][1]) && !/running|idle|unknown/.test(x[2]));
    ok(covers, 'vcpus --csv [begin, end) of ' + ri.label + ': out of guest mode from the exit\'s begin to its end (' +
      s.begin + ', ' + s.end + '; ' + mine.map((x) => x[2]).join(' ') + ')', csv.slice(0, 600));
    // and in `vmscope exits --csv` of [begin, end]: one exit of its vCPU, its reason, its
    // duration exactly (min = max)
    const ex = execFileSync(vmscope, ['exits', '--csv', '--from', String(s.begin), '--to',
      String(s.end + 1)].concat(traces), { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
    const er = ex.split('\n').slice(1).map((l) => l.split(',')).filter((f) => f.length > 8 &&
      f[0] === ri.machine && Number(f[1]) === ri.vcpu);
    ok(er.length === 1 && er[0][4] === s.name && Number(er[0][5]) === 1 && Number(er[0][7]) === s.duration &&
      Number(er[0][8]) === s.duration,
      'exits --csv of that window: one exit of ' + ri.label + ', ' + s.name + ', ' + s.duration + ' ns', ex);
    // and the kvm_exit event itself, as dump prints it at its begin: its reason and RIP
    const ev = execFileSync(vmscope, ['dump', '--from', String(s.begin), '--to', String(s.begin + 1)]
      .concat(traces), { stdio: ['ignore', 'pipe', 'ignore'] }).toString().split('\n')
      .filter((l) => / kvm_exit: /.test(l));
    const rip = BigInt(s.guest_rip);
    ok(ev.some((l) => l.includes(' reason ' + s.name + ' ') && / rip (0x[0-9a-f]+)/.test(l) &&
      BigInt(/ rip (0x[0-9a-f]+)/.exec(l)[1]) === rip),
      'dump --from begin --to begin+1: the kvm_exit with its reason ' + s.name + ' and RIP ' + s.guest_rip, ev.join('\n'));
    if (STATIC) {
      const note = await page.textContent('#drill-events');
      ok(/not in this page/.test(note) && /vmscope serve/.test(note), 'the static page: the event list says serve lists the events', note);
      await rangeChecks(page, box, exitAt, traces, waitData);
    }
  }
  if (target && !STATIC) {
    // the event list: the lines of dump --from --to for the view
    const v = await page.evaluate(() => window.vmsDrill.view());
    await page.waitForFunction(() => document.querySelectorAll('#drill-events .ev').length > 0,
      null, { timeout: T });
    const lines = await page.$$eval('#drill-events .ev', (e) => e.map((x) => x.textContent));
    const dump = execFileSync(vmscope, ['dump', '--from', String(Math.floor(v[0])), '--to',
      String(Math.ceil(v[1])), '--limit', '200'].concat(traces), { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString().split('\n').filter((l) => l);
    ok(lines.length > 0 && JSON.stringify(lines) === JSON.stringify(dump),
      'the event list = dump --from --to (' + dump.length + ' lines)', lines.slice(0, 3).join('\n'));
    // a click on a line puts the cursor at its time (dump's seconds, to the microsecond)
    const k = Math.min(2, lines.length - 1);
    await page.click('#drill-events .ev[data-k="' + k + '"]');
    const mt = /^(\d+)\.(\d{6}) /.exec(lines[k]);
    const want = mt ? Number(mt[1]) * 1e9 + Number(mt[2]) * 1e3 : null;
    const cur = await page.evaluate(() => window.vmsDrill.cursor());
    const marked = await page.$$eval('#drill-events .ev.cur', (e) => e.map((x) => x.textContent));
    ok(want !== null && cur === want && marked.length === 1 && marked[0].slice(0, 18) === lines[k].slice(0, 18),
      'a click on event line ' + k + ' puts the cursor at its time (' + want + ' ns) and marks it',
      JSON.stringify({ cur: cur, want: want, marked: marked }));
    await rangeChecks(page, box, exitAt, traces, waitData);
  }
  // search a guest thread by name: Ctrl+F, type, Enter
  await page.keyboard.press('Control+f');
  await page.keyboard.type(thread);
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => window.vmsDrill.matches().length > 0, null, { timeout: T })
    .catch(() => {});
  const st = await page.textContent('#drill-status');
  ok(/match 1 of/.test(st) && st.includes(thread), 'search finds the guest thread ' + thread, st);
  // a click on the first finding zooms to its interval (the whole trace when it has none)
  // and selects the row it names; the findings are those of `vmscope report --json`
  const rep = JSON.parse(execFileSync(vmscope, ['report', '--json'].concat(traces),
    { stdio: ['ignore', 'pipe', 'ignore'] }).toString()).findings;
  const links = await page.$$eval('#drill-findings a.finding', (a) => a.map((x) => x.parentElement.textContent));
  if (STATIC) {
    ok(links.length === 0 && (await page.textContent('#drill-findings')) === '',
      'the static page: no finding links (serve has them; ' + rep.length + ' findings)');
    rep.length = 0;
  } else
  ok(links.length === rep.length && rep.every((f, k) => links[k].includes(f.text)),
    'the findings of report --json at the top (' + rep.length + ')', links.join('\n'));
  if (rep.length) {
    await page.click('#drill-findings a.finding');
    const f = rep[0];
    const rows = await page.evaluate(() => window.vmsDrill.rows());
    const v = await page.evaluate(() => window.vmsDrill.view());
    const sel = await page.evaluate(() => window.vmsDrill.selected());
    const whole = f.start_ns === null;
    const okView = whole ? (v[0] === all[0] && v[1] === all[1]) : (v[0] === f.start_ns && v[1] === f.end_ns);
    const r = rows[sel] || {};
    ok(okView && r.machine === f.machine && (f.vcpu !== null ? r.vcpu === f.vcpu : r.tid === f.tid),
      'a click on the finding zooms to its interval (' + (whole ? 'the whole trace' : f.start_ns + '..' + f.end_ns) +
      ') and selects ' + f.machine + ' ' + (f.vcpu !== null ? 'vCPU ' + f.vcpu : 'tid ' + f.tid),
      JSON.stringify({ v: v, row: r }));
  }
  await page.screenshot({ path: OUT + '/serve.png' });
  ok(errors.length === 0, 'no console errors', errors.join('\n'));
  ok(foreign.length === 0, 'no request leaves the loopback server', foreign.join('\n'));
  await browser.close();
  console.log('1..' + n);
  process.exit(failed ? 1 : 0);
})().catch((e) => { console.log('not ok ' + (n + 1) + ' - the page test ran\n# ' + e); console.log('1..' + (n + 1)); process.exit(1); });
