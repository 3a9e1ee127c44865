// The page of `vmscope serve` in headless Chromium (playwright-core, Debian's chromium): it
// loads from the server with no console error and no request that leaves the loopback
// server; the drill-down zooms by the wheel and keys until single kvm_exit slices are drawn
// and one is wider than 6 px; a click on it opens the details panel, whose reason, RIP and
// begin/end ns must be those of the slice the server sent, and which must be an interval of
// `vmscope vcpus --csv` and a reason of `vmscope exits --csv` over [begin, end] (independent
// commands); the event list holds the lines of `vmscope dump --from --to` of the view;
// Ctrl+F then Enter finds a guest thread by name (named by the caller from dump's lines).
// Speaks TAP. usage: node test_serve_page.js CHROMIUM URL THREAD VMSCOPE TRACE...
'use strict';
const fs = require('fs');
const { execFileSync } = require('child_process');
const { chromium } = require('playwright-core');

const [chromiumPath, url, thread, vmscope, ...traces] = process.argv.slice(2);
let n = 0, failed = 0;
function ok(cond, name, diag) {
  n++;
  console.log((cond ? 'ok ' : 'not ok ') + n + ' - ' + name);
  if (!cond) { failed++; if (diag) console.log('# ' + String(diag).replace(/\n/g, '\n# ')); }
}

(async () => {
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [], foreign = [];
  const origin = new URL(url).origin;
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => { if (!r.url().startsWith(origin + '/')) foreign.push(r.url()); });
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForSelector('#drill[data-ready="1"]', { timeout: 30000 });
  const waitData = async () => {
    await page.waitForFunction(() => {
      const d = window.vmsDrill.data(), v = window.vmsDrill.view();
      return d && d.from === Math.floor(v[0]) && d.to === Math.ceil(v[1]);
    }, null, { timeout: 30000 });
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
  const box = await (await page.$('#drill-canvas')).boundingBox();
  const midX = box.x + 220 + (box.width - 220) / 2;
  let exact = false, wheels = 0;
  for (let k = 0; k < 60 && !exact; k++) {
    if (k % 2 === 0) {   // the wheel, at the middle of the plot
      await page.mouse.move(midX, box.y + 40);
      await page.mouse.wheel(0, -100);
      wheels++;
    } else {
      await page.keyboard.press('+');
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
    await page.mouse.move(box.x + target.x, box.y + 40);
    await page.mouse.wheel(0, -100);
    await waitData();
    target = await pick();
  }
  ok(target !== null && target.w >= 6, 'an ended exit slice zoomed by the wheel to ' + (target && target.w.toFixed(1)) + ' px');
  if (target) {
    await page.mouse.click(box.x + target.x, box.y + target.y);
    const det = await page.textContent('#drill-details');
    const s = target.s;
    ok(det.includes(s.name) && det.includes(s.begin + ' ns') && det.includes(s.end + ' ns') &&
       det.includes(s.guest_rip), 'the details panel: reason, exact begin/end ns, guest RIP',
       det);
    // the same exit in `vmscope vcpus --csv` of that window: a vmm/halted interval begins at
    // its begin and ends at its end (an independent command's numbers)
    const csv = execFileSync(vmscope, ['vcpus', '--csv', '--from', String(s.begin), '--to',
      String(s.end + 1)].concat(traces), { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
    const m = exitAt.id.split(':');
    const hit = csv.split('\n').slice(1).map((l) => l.split(',')).filter((f) => f.length > 5)
      .some((f) => Number(f[2]) === s.begin && Number(f[3]) === s.end && /vmm|halted/.test(f[5]));
    ok(hit, 'the exit clicked is a vmm/halted interval of vcpus --csv [begin, end) (' + s.begin + ', ' + s.end + ')', csv.slice(0, 600));
    void m;
    // and in `vmscope exits --csv` of [begin, end]: its reason, its duration within min..max
    const ex = execFileSync(vmscope, ['exits', '--csv', '--from', String(s.begin), '--to',
      String(s.end + 1)].concat(traces), { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
    const er = ex.split('\n').slice(1).map((l) => l.split(',')).filter((f) => f.length > 8 && f[4] === s.name);
    ok(er.length === 1 && Number(er[0][7]) <= s.duration && s.duration <= Number(er[0][8]),
      'exits --csv of that window has its reason ' + s.name + ' and its duration ' + s.duration + ' ns', ex);
    // the event list: the lines of dump --from --to for the view
    const v = await page.evaluate(() => window.vmsDrill.view());
    await page.waitForFunction(() => document.querySelectorAll('#drill-events .ev').length > 0,
      null, { timeout: 30000 });
    const lines = await page.$$eval('#drill-events .ev', (e) => e.map((x) => x.textContent));
    const dump = execFileSync(vmscope, ['dump', '--from', String(Math.floor(v[0])), '--to',
      String(Math.ceil(v[1])), '--limit', '200'].concat(traces), { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString().split('\n').filter((l) => l);
    ok(lines.length > 0 && JSON.stringify(lines) === JSON.stringify(dump),
      'the event list = dump --from --to (' + dump.length + ' lines)', lines.slice(0, 3).join('\n'));
  }
  // search a guest thread by name: Ctrl+F, type, Enter
  await page.keyboard.press('Control+f');
  await page.keyboard.type(thread);
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => window.vmsDrill.matches().length > 0, null, { timeout: 30000 })
    .catch(() => {});
  const st = await page.textContent('#drill-status');
  ok(/match 1 of/.test(st) && st.includes(thread), 'search finds the guest thread ' + thread, st);
  // a click on the first finding zooms to its interval (the whole trace when it has none)
  // and selects the row it names; the findings are those of `vmscope report --json`
  const rep = JSON.parse(execFileSync(vmscope, ['report', '--json'].concat(traces),
    { stdio: ['ignore', 'pipe', 'ignore'] }).toString()).findings;
  const links = await page.$$eval('#drill-findings a.finding', (a) => a.map((x) => x.parentElement.textContent));
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
  await page.screenshot({ path: process.env.VMS_BUILD_DIR + '/test-tmp/browser/serve.png' });
  ok(errors.length === 0, 'no console errors', errors.join('\n'));
  ok(foreign.length === 0, 'no request leaves the loopback server', foreign.join('\n'));
  await browser.close();
  console.log('1..' + n);
  process.exit(failed ? 1 : 0);
})().catch((e) => { console.log('not ok ' + (n + 1) + ' - the page test ran\n# ' + e); console.log('1..' + (n + 1)); process.exit(1); });
