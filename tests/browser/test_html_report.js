// The HTML report in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven by
// playwright-core. For each page given: it loads with no console error and no network
// request; it has one timeline row per vCPU and per physical CPU (the expected numbers are
// given by the caller, counted from `vmscope vcpus --csv` and `vmscope pcpus --csv`, not from
// the page's code); the wheel and the keys zoom; hovering a slice shows its tooltip naming
// the row and a state; dragging selects a range and shows its statistics; a screenshot is
// saved. Speaks TAP.
//
// usage: node test_html_report.js CHROMIUM OUTDIR NAME=PAGE:VCPUS:PCPUS...
// (PCPUS '-' when the physical-CPU count is not known: that check is a skip)
'use strict';
const path = require('path');
const { chromium } = require('playwright-core');

const [chromiumPath, outDir, ...specs] = process.argv.slice(2);
let n = 0, failed = 0;
function ok(cond, name, diag) {
  n++;
  console.log((cond ? 'ok ' : 'not ok ') + n + ' - ' + name);
  if (!cond) {
    failed++;
    if (diag) console.log('# ' + String(diag).replace(/\n/g, '\n# '));
  }
}
function skip(name, why) { n++; console.log('ok ' + n + ' - ' + name + ' # SKIP ' + why); }

const STATE_NAMES = ['unknown', 'idle', 'running', 'VMM', 'preempted', 'halted', 'host idle',
  'host thread', 'hypervisor (vCPU thread)', 'guest thread', 'guest idle'];

async function checkPage(browser, name, file, vcpus, pcpus) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [], requests = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  const url = 'file://' + path.resolve(file);
  page.on('request', (r) => { if (r.url() !== url) requests.push(r.url()); });
  const t0 = Date.now();
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForSelector('#labels .row-label', { timeout: 30000 });
  console.log('# ' + name + ': loaded and drawn in ' + (Date.now() - t0) + ' ms');

  const counts = await page.evaluate(() => ({
    vcpu: document.querySelectorAll('#labels .row-label[data-kind="vcpu"]').length,
    pcpu: document.querySelectorAll('#labels .row-label[data-kind="pcpu"]').length,
    thread: document.querySelectorAll('#labels .row-label[data-kind="thread"]').length,
  }));
  ok(counts.vcpu === vcpus, name + ': one timeline row per vCPU (' + vcpus + ')',
    'page has ' + counts.vcpu);
  if (pcpus === null) skip(name + ': one timeline row per physical CPU', 'no pcpus count');
  else ok(counts.pcpu === pcpus, name + ': one timeline row per physical CPU (' + pcpus + ')',
    'page has ' + counts.pcpu);
  const summary = await page.textContent('#summary pre');
  ok(/vmscope report:/.test(summary), name + ': the report summary is at the top');

  const canvas = await page.$('#canvas');
  const box = await canvas.boundingBox();
  const range = async () => page.evaluate(() => {
    const r = document.getElementById('range');
    return [Number(r.dataset.v0), Number(r.dataset.v1)];
  });
  const [a0, b0] = await range();
  // zoom in with the wheel around the middle, then with the keyboard
  await page.mouse.move(box.x + box.width / 2, box.y + 30);
  await page.mouse.wheel(0, -400);
  await page.waitForTimeout(100);
  const [a1, b1] = await range();
  ok(b1 - a1 < (b0 - a0) * 0.9, name + ': the wheel zooms in', [a0, b0, a1, b1].join(' '));
  await page.keyboard.press('+');
  await page.waitForTimeout(100);
  const [a2, b2] = await range();
  ok(b2 - a2 < (b1 - a1) * 0.9, name + ': + zooms in', [a1, b1, a2, b2].join(' '));
  await page.keyboard.press('ArrowRight');
  await page.waitForTimeout(100);
  const [a3, b3] = await range();
  ok(a3 > a2 && Math.abs((b3 - a3) - (b2 - a2)) < 1e-6 * (b2 - a2) + 1,
    name + ': the right arrow pans', [a2, b2, a3, b3].join(' '));
  await page.keyboard.press('0');
  await page.waitForTimeout(100);

  // hover the first vCPU row's middle: its label's vertical position is the row's
  const rowBox = await (await page.$('#labels .row-label[data-kind="vcpu"]')).boundingBox();
  const label = await page.textContent('#labels .row-label[data-kind="vcpu"]');
  let tip = '';
  for (const fx of [0.5, 0.3, 0.7, 0.1, 0.9]) {
    await page.mouse.move(box.x + box.width * fx, rowBox.y + rowBox.height / 2);
    await page.waitForTimeout(50);
    if (await page.isVisible('#tooltip')) { tip = await page.textContent('#tooltip'); break; }
  }
  console.log('# tooltip: ' + tip.replace(/\n/g, ' '));
  ok(tip.includes(label) && STATE_NAMES.some((s) => tip.includes(s)) && /slices beginning here/.test(tip),
    name + ': hovering a vCPU slice shows its row, state and slices', tip);

  // select a range by dragging over the rows
  await page.mouse.move(box.x + box.width * 0.25, rowBox.y + 4);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.5, rowBox.y + 40, { steps: 5 });
  await page.mouse.up();
  await page.waitForTimeout(100);
  const sel = await page.textContent('#selection');
  ok(/Selected \+/.test(sel) && sel.includes(label) && /slices/.test(sel),
    name + ': dragging selects a range and shows its statistics', sel.slice(0, 300));
  // the exit histograms: a page holding its exact intervals shows the selection's (and says
  // which range); a page of the summary alone says they are the whole trace's
  const exact = await page.evaluate(() => document.getElementById('exact-note').dataset.held === '1');
  if (exact) {
    await page.waitForFunction(() => document.getElementById('exits').dataset.range !== undefined,
      null, { timeout: 30000 }).catch(() => {});
    const r = await page.evaluate(() => [document.getElementById('exits').dataset.range || '',
      document.getElementById('exits-range') ? document.getElementById('exits-range').textContent : '']);
    const [a, b] = r[0].split(',');
    ok(a && r[1].includes('[' + a + ', ' + b + ')') && (await page.$$('#exits figure.hist')).length > 0,
      name + ': exact page: the exit histograms follow the selection and name its range', r.join(' | '));
  } else {
    const note = await page.textContent('#exits');
    ok(/whole trace, not of the selection/.test(note) && /vmscope serve/.test(note),
      name + ': summary page: the exit histograms say they are the whole trace\'s', note.slice(0, 300));
  }

  const png = path.join(outDir, name + '.png');
  await page.evaluate(() => document.getElementById('timeline-section').scrollIntoView());
  await page.screenshot({ path: png, fullPage: false });
  console.log('# screenshot: ' + png);
  ok(errors.length === 0, name + ': no console error', errors.join('\n'));
  ok(requests.length === 0, name + ': no network request', requests.join('\n'));
  await page.close();
}

(async () => {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    for (const spec of specs) {
      const m = /^([^=]+)=(.+):(\d+):(\d+|-)$/.exec(spec);
      if (!m) throw new Error('bad page spec ' + spec);
      await checkPage(browser, m[1], m[2], Number(m[3]), m[4] === '-' ? null : Number(m[4]));
    }
  } catch (e) {
    ok(false, 'the browser test ran to its end', e.stack || e);
  } finally {
    await browser.close();
  }
  console.log('1..' + n);
  process.exit(failed ? 1 : 0);
})();
