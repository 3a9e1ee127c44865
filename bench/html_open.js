// Prints the time an HTML report takes to open in headless Chromium: from navigation to the
// end of the page's script, which draws the timeline (document.body.dataset.readyMs, set by
// lib/output/html/timeline.js), in ms of wall time, then the CPU time of the renderer's main
// thread by then (CDP Performance.getMetrics ThreadTime; it does not count the waits of a
// loaded machine). usage: node bench/html_open.js PAGE  ->  "WALL_MS CPU_MS"
'use strict';
const path = require('path');
const { chromium } = require(path.join(__dirname, '..', 'tests', 'browser', 'node_modules', 'playwright-core'));
(async () => {
  const b = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const p = await b.newPage({ viewport: { width: 1400, height: 1000 } });
  const cdp = await p.context().newCDPSession(p);
  await cdp.send('Performance.enable');
  const before = (await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === 'ThreadTime').value;
  await p.goto('file://' + path.resolve(process.argv[2]), { waitUntil: 'load' });
  await p.waitForFunction(() => document.body.dataset.readyMs);
  const after = (await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === 'ThreadTime').value;
  const wall = await p.evaluate(() => document.body.dataset.readyMs);
  console.log(wall + ' ' + ((after - before) * 1000).toFixed(1));
  await b.close();
})();
