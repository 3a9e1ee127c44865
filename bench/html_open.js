// Prints the time (ms) an HTML report takes to open in headless Chromium: from navigation
// to the end of the page's script, which draws the timeline (document.body.dataset.readyMs,
// set by lib/output/html/timeline.js). usage: node bench/html_open.js PAGE
'use strict';
const path = require('path');
const { chromium } = require(path.join(__dirname, '..', 'tests', 'browser', 'node_modules', 'playwright-core'));
(async () => {
  const b = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const p = await b.newPage({ viewport: { width: 1400, height: 1000 } });
  await p.goto('file://' + path.resolve(process.argv[2]), { waitUntil: 'load' });
  await p.waitForFunction(() => document.body.dataset.readyMs);
  console.log(await p.evaluate(() => document.body.dataset.readyMs));
  await b.close();
})();
