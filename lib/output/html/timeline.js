/* vmscope HTML report: the interactive timeline. Plain JavaScript, no library; embedded in
 * the page at build time (lib/output/html/embed.py). It reads two elements of the page:
 * #vms-data (JSON: the time axis, the rows, the names) and #vms-rows (base64: every row's
 * encoded summary, the format of lib/output/html_summary.h), and draws them on a canvas.
 *
 * The page holds a summary, never the events: per row and zoom level, for each bucket, the
 * dominant state, the number of slices beginning in it and the name of its longest piece;
 * and at the finest level, each state's share of the bucket. */
(function () {
  'use strict';

  const D = JSON.parse(document.getElementById('vms-data').textContent);

  /* States per kind of row, in the order of their codes; the colours of Trace Compass's
   * Virtual CPU view (running green, VMM red, preempted purple); halted distinct. */
  const VCPU_STATES = [
    ['unknown', '#e8e8e8'], ['idle', '#c4c4c4'], ['running', '#2e9e3a'],
    ['VMM', '#d7191c'], ['preempted', '#8e2ab8'], ['halted', '#f0a818'],
  ];
  const STATES = {
    vcpu: VCPU_STATES,
    /* a thread is never idle: code 1 is its time on no vCPU */
    thread: VCPU_STATES.map((s, i) => (i === 1 ? ['not on a vCPU', '#f7f7f7'] : s)),
    pcpu: [
      ['unknown', '#e8e8e8'], ['host idle', '#d6d6d6'], ['host thread', '#3f74c8'],
      ['hypervisor (vCPU thread)', '#d7191c'], ['guest thread', '#2e9e3a'],
      ['guest idle', '#9fd8a6'],
    ],
  };
  const NO_DATA = 7;
  /* colours as the 32-bit pixels of an ImageData (bytes r, g, b, a in memory) */
  function pixel(hex) {
    const v = parseInt(hex.slice(1), 16);
    return ((255 << 24) | ((v & 255) << 16) | (v & 0xff00) | ((v >> 16) & 255)) >>> 0;
  }
  const PAL32 = {};
  for (const k in STATES) PAL32[k] = Uint32Array.from(STATES[k], (s) => pixel(s[1]));
  const WHITE = pixel('#ffffff'), GROUP_BG = pixel('#f6f6f6'), TICK = pixel('#7a7a7a');
  const THREAD_OFF = 1;
  const KIND_TITLE = {
    vcpu: 'virtual CPUs', pcpu: 'physical CPUs (what really ran: the fused view)',
    thread: 'guest threads (what stopped them)',
  };

  /* ---- decoding the rows ---- */

  const bytes = (function () {
    /* both decoders skip the line breaks */
    const text = document.getElementById('vms-rows').textContent;
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text);
    const s = atob(text), b = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
    return b;
  })();

  /* A row's sections are decoded when first needed: a level when it is drawn, the shares
   * when a slice is hovered or a range selected. */
  function reader(p, end) {
    return {
      p: p,
      varint() {
        let v = 0, m = 1, b;
        do {
          if (this.p >= end) throw new Error('vmscope: row data ends early');
          b = bytes[this.p++];
          v += (b & 127) * m;
          m *= 128;
        } while (b & 128);
        return v;
      },
    };
  }
  function levelOf(r, l) {
    if (r.levels[l]) return r.levels[l];
    const rd = reader(r.off + r.sections[l], r.off + r.sections[l + 1]);
    const n = rd.varint();
    const lv = { start: new Float64Array(n + 1), st: new Uint8Array(n),
      cnt: new Float64Array(n), who: new Uint32Array(n) };
    let b = 0;
    for (let i = 0; i < n; i++) {
      lv.start[i] = b;
      b += rd.varint();
      lv.st[i] = bytes[rd.p++];
      lv.cnt[i] = rd.varint();
      lv.who[i] = rd.varint();
    }
    lv.start[n] = b;
    r.levels[l] = lv;
    return lv;
  }
  function sharesOf(r) {
    if (r.shares) return r.shares;
    const rd = reader(r.off + r.sections[D.levels], r.off + r.len);
    const n = rd.varint();
    const sh = { start: new Float64Array(n + 1), q: new Uint8Array(n * 8) };
    let b = 0;
    for (let i = 0; i < n; i++) {
      sh.start[i] = b;
      b += rd.varint();
      const mask = bytes[rd.p++];
      for (let k = 0; k < 8; k++) if (mask & (1 << k)) sh.q[i * 8 + k] = bytes[rd.p++];
    }
    sh.start[n] = b;
    r.shares = sh;
    return sh;
  }

  /* the index of the run holding bucket i (start[k] <= i < start[k+1]), -1 outside */
  function runAt(start, n, i) {
    if (n === 0 || i < start[0] || i >= start[n]) return -1;
    let lo = 0, hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (start[mid] <= i) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  /* ---- formatting ---- */

  /* a trace whose clock counts cycles (no TSC2NSEC, no --tsc-hz) gives cycles, never
   * seconds: SI prefixes then */
  const CYCLES = D.time_unit === 'cycles';
  function fmtCycles(c, digits) {
    const a = Math.abs(c), d = digits === undefined ? 3 : digits;
    if (a < 1e3) return c.toFixed(0) + ' cycles';
    if (a < 1e6) return (c / 1e3).toFixed(d) + ' k cycles';
    if (a < 1e9) return (c / 1e6).toFixed(d) + ' M cycles';
    return (c / 1e9).toFixed(d) + ' G cycles';
  }
  function fmtNs(ns, digits) {
    if (CYCLES) return fmtCycles(ns, digits);
    const a = Math.abs(ns), d = digits === undefined ? 3 : digits;
    if (a < 1e3) return ns.toFixed(0) + ' ns';
    if (a < 1e6) return (ns / 1e3).toFixed(d) + ' \u00b5s';
    if (a < 1e9) return (ns / 1e6).toFixed(d) + ' ms';
    return (ns / 1e9).toFixed(d + 3) + ' s';
  }
  function fmtDur(ns) {
    if (CYCLES) return fmtCycles(ns, 1);
    const a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + ' ns';
    if (a < 1e6) return (ns / 1e3).toPrecision(4) + ' \u00b5s';
    if (a < 1e9) return (ns / 1e6).toPrecision(4) + ' ms';
    return (ns / 1e9).toPrecision(5) + ' s';
  }
  /* a time of the page as "+x" from the first event */
  function fmtT(t) { return '+' + fmtNs(t - D.first_ns, 6); }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  }

  /* ---- layout: group headers and rows ---- */

  const ROW_H = 16, GROUP_H = 22, AXIS_H = 26;
  const labels = document.getElementById('labels');
  const plot = document.getElementById('plot');
  const canvas = document.getElementById('canvas');
  const axis = document.getElementById('axis');
  const tooltip = document.getElementById('tooltip');
  const selBox = document.getElementById('selection');
  const rangeBox = document.getElementById('range');
  const items = [];   /* {y, h, row} */
  let y = 0, lastGroup = '';
  const spacer = document.createElement('div');
  spacer.style.height = AXIS_H + 'px';
  spacer.className = 'axis-spacer';
  labels.appendChild(spacer);
  for (const r of D.rows) {
    const group = r.kind + '\u0000' + r.machine;
    if (group !== lastGroup) {
      const g = document.createElement('div');
      g.className = 'group';
      g.style.height = GROUP_H + 'px';
      g.textContent = r.machine + ': ' + KIND_TITLE[r.kind];
      labels.appendChild(g);
      items.push({ y: y, h: GROUP_H, row: null });
      y += GROUP_H;
      lastGroup = group;
    }
    r.levels = [];
    const el = document.createElement('div');
    el.className = 'row-label';
    el.style.height = ROW_H + 'px';
    el.dataset.kind = r.kind;
    el.dataset.machine = r.machine;
    el.dataset.id = r.id;
    el.textContent = r.label;
    el.title = r.label + ' (' + r.slices + ' slices)';
    labels.appendChild(el);
    r.el = el;
    items.push({ y: y, h: ROW_H, row: r });
    y += ROW_H;
  }
  const totalH = y;

  /* legend */
  (function () {
    const lg = document.getElementById('legend');
    const title = { vcpu: 'vCPUs', thread: 'guest threads', pcpu: 'physical CPUs' };
    for (const kind of ['vcpu', 'thread', 'pcpu']) {
      const p = document.createElement('div');
      p.innerHTML = '<b>' + title[kind] + ':</b> ' + STATES[kind].map((s) =>
        '<span class="sw" style="background:' + s[1] + '"></span>' + esc(s[0])).join(' ') +
        (kind === 'thread' ? ' <span class="sw" style="background:#7a7a7a"></span>ran briefly (a grey tick)' : '');
      lg.appendChild(p);
    }
  })();

  /* ---- the view ---- */

  const full0 = D.first_ns, full1 = Math.max(D.end_ns, D.first_ns + 1);
  const minSpan = Math.max(50, D.bucket_ns * 4);
  let v0 = full0, v1 = full1;
  let sel = null;        /* {a, b} in ns, a < b */
  let drag = null;       /* {kind: 'select'|'pan', x0, t0, v0, v1} */
  let W = 0;
  let image = null;      /* the ImageData the rows are painted into, kept between draws */
  const timeline = document.getElementById('timeline');
  timeline.addEventListener('scroll', () => redraw());

  function clampView() {
    let span = v1 - v0;
    const fullSpan = full1 - full0;
    if (span < minSpan) { const c = (v0 + v1) / 2; v0 = c - minSpan / 2; v1 = c + minSpan / 2; span = minSpan; }
    if (span > fullSpan) { v0 = full0; v1 = full1; return; }
    if (v0 < full0) { v1 += full0 - v0; v0 = full0; }
    if (v1 > full1) { v0 -= v1 - full1; v1 = full1; }
  }
  function level() {
    const nsPerPx = (v1 - v0) / Math.max(W, 1);
    let l = Math.round(Math.log2(Math.max(nsPerPx / D.bucket_ns, 1)));
    return Math.max(0, Math.min(D.levels - 1, l));
  }
  function xOf(t) { return (t - v0) / (v1 - v0) * W; }
  function tOf(x) { return v0 + x / W * (v1 - v0); }

  let pending = false;
  function redraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; draw(); });
  }

  function draw() {
    const dpr = window.devicePixelRatio || 1;
    W = plot.clientWidth;
    for (const [c, h] of [[canvas, totalH], [axis, AXIS_H]]) {
      if (c.width !== Math.round(W * dpr) || c.height !== Math.round(h * dpr)) {
        c.width = Math.round(W * dpr);
        c.height = Math.round(h * dpr);
        c.style.width = W + 'px';
        c.style.height = h + 'px';
      }
    }
    const ctx = canvas.getContext('2d');
    const l = level(), bw = D.bucket_ns * Math.pow(2, l);
    /* the rows are painted pixel by pixel into one image: each device pixel column shows
     * the dominant state of the bucket at its middle (the level has about one bucket per
     * pixel), which costs the same whatever the number of slices */
    const cw = canvas.width;
    /* only the band of rows scrolled into view is painted (redrawn on scroll) */
    const top = Math.max(0, timeline.scrollTop - AXIS_H), bottom = top + timeline.clientHeight;
    const by0 = Math.max(0, Math.floor(top * dpr)), by1 = Math.min(canvas.height, Math.ceil(bottom * dpr));
    const bh = Math.max(by1 - by0, 1);
    if (!image || image.width !== cw || image.height !== bh) image = ctx.createImageData(cw, bh);
    const img = image, px = new Uint32Array(img.data.buffer);
    px.fill(WHITE);
    const line = new Uint32Array(cw), mark = new Uint32Array(cw), nsPerDev = (v1 - v0) / cw;
    for (const it of items) {
      const y0 = Math.max(Math.round(it.y * dpr), by0) - by0;
      const y1 = Math.min(Math.round((it.y + it.h) * dpr), by1) - by0;
      if (y1 <= y0) continue;
      if (!it.row) {
        px.fill(GROUP_BG, y0 * cw, y1 * cw);
        continue;
      }
      const r = it.row, lv = levelOf(r, l), n = lv.st.length, pal = PAL32[r.kind];
      let k = Math.max(runAt(lv.start, n, Math.floor(v0 / bw)), 0);
      /* a thread that ran for less than half of a bucket leaves it "not on a vCPU": a grey
       * tick at the bottom of its row says that it ran there (slices begin there) */
      const ticks = r.kind === 'thread';
      for (let x = 0; x < cw; x++) {
        const b = Math.floor((v0 + (x + 0.5) * nsPerDev) / bw);
        while (k < n - 1 && lv.start[k + 1] <= b) k++;
        const inside = n && lv.start[k] <= b && b < lv.start[n];
        const st = inside ? lv.st[k] : NO_DATA;
        line[x] = st < pal.length ? pal[st] : WHITE;
        if (ticks) mark[x] = inside && st === THREAD_OFF && lv.cnt[k] > 0 ? TICK : line[x];
      }
      const ry0 = Math.round(it.y * dpr) - by0, ry1 = Math.round((it.y + it.h) * dpr) - by0;
      const yt = ry1 - Math.round(dpr) - Math.round(5 * dpr);
      for (let y = Math.max(ry0 + Math.round(2 * dpr), y0); y < Math.min(ry1 - Math.round(dpr), y1); y++)
        px.set(ticks && y >= yt ? mark : line, y * cw);
    }
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, cw, canvas.height);
    ctx.putImageData(img, 0, by0);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    if (sel) {
      const a = xOf(sel.a), b = xOf(sel.b);
      ctx.fillStyle = 'rgba(30, 90, 200, 0.18)';
      ctx.fillRect(a, 0, b - a, totalH);
      ctx.strokeStyle = 'rgba(30, 90, 200, 0.8)';
      ctx.strokeRect(a + 0.5, 0.5, b - a, totalH - 1);
    }
    drawAxis(dpr);
    rangeBox.textContent = 'Showing ' + fmtT(v0) + ' \u2013 ' + fmtT(v1) + ' (' + fmtDur(v1 - v0) +
      ') of ' + fmtDur(full1 - full0) + '; ' + fmtDur(bw) + ' per bucket (level ' + l + ')';
    rangeBox.dataset.v0 = v0;
    rangeBox.dataset.v1 = v1;
  }

  function drawAxis(dpr) {
    const ctx = axis.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, AXIS_H);
    ctx.fillStyle = '#fafafa';
    ctx.fillRect(0, 0, W, AXIS_H);
    const span = v1 - v0, target = span / Math.max(W / 110, 1);
    let step = Math.pow(10, Math.floor(Math.log10(target)));
    if (target / step > 5) step *= 5; else if (target / step > 2) step *= 2;
    ctx.fillStyle = '#333';
    ctx.strokeStyle = '#888';
    ctx.font = '11px sans-serif';
    /* the unit of the largest time shown, as many decimals as the step needs */
    const big = Math.max(Math.abs(v1 - D.first_ns), step);
    const unit = CYCLES ? (big >= 1e9 ? [1e9, 'G cycles'] : big >= 1e6 ? [1e6, 'M cycles'] : big >= 1e3 ? [1e3, 'k cycles'] : [1, 'cycles'])
      : big >= 1e9 ? [1e9, 's'] : big >= 1e6 ? [1e6, 'ms'] : big >= 1e3 ? [1e3, '\u00b5s'] : [1, 'ns'];
    const dec = Math.max(0, Math.ceil(Math.log10(unit[0] / step) - 1e-9));
    for (let t = Math.ceil((v0 - D.first_ns) / step) * step + D.first_ns; t <= v1; t += step) {
      const x = Math.round(xOf(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, AXIS_H - 8);
      ctx.lineTo(x, AXIS_H);
      ctx.stroke();
      ctx.fillText('+' + ((t - D.first_ns) / unit[0]).toFixed(dec) + ' ' + unit[1], x + 2, 12);
    }
  }

  /* ---- what is under the pointer ---- */

  function itemAt(py) {
    for (const it of items) if (py >= it.y && py < it.y + it.h) return it;
    return null;
  }

  /* shares of each state over finest buckets [b0, b1) (fractions; bucket ends partial) */
  function sharesOver(r, t0, t1) {
    const w = D.bucket_ns, sh = sharesOf(r), n = sh.start.length - 1, ns = new Float64Array(8);
    const b0 = Math.max(Math.floor(t0 / w), 0), b1 = Math.ceil(t1 / w);
    let k = runAt(sh.start, n, b0);
    if (k < 0) k = 0;
    for (; k < n && sh.start[k] < b1; k++) {
      const s = Math.max(sh.start[k], b0), e = Math.min(sh.start[k + 1], b1);
      if (e <= s) continue;
      /* the part of [s, e) buckets inside [t0, t1) */
      const dur = Math.min(e * w, t1) - Math.max(s * w, t0);
      if (dur <= 0) continue;
      for (let j = 0; j < 8; j++) if (sh.q[k * 8 + j]) ns[j] += dur * sh.q[k * 8 + j] / 255;
    }
    return ns;
  }
  function slicesOver(r, t0, t1) {
    const w = D.bucket_ns, lv = levelOf(r, 0), n = lv.st.length;
    const b0 = Math.max(Math.floor(t0 / w), 0), b1 = Math.ceil(t1 / w);
    let k = Math.max(runAt(lv.start, n, b0), 0), c = 0;
    for (; k < n && lv.start[k] < b1; k++) {
      const s = Math.max(lv.start[k], b0), e = Math.min(lv.start[k + 1], b1);
      if (e > s) c += lv.cnt[k] * (e - s);
    }
    return c;
  }
  function sharesText(r, ns) {
    const tot = ns.reduce((a, b) => a + b, 0), pal = STATES[r.kind], parts = [];
    for (let j = 0; j < pal.length; j++)
      if (ns[j] > 0) parts.push([ns[j], pal[j][0]]);
    parts.sort((a, b) => b[0] - a[0]);
    return parts.map((p) => esc(p[1]) + ' ' + fmtDur(p[0]) + ' (' +
      (100 * p[0] / tot).toFixed(1) + '%)').join(', ');
  }

  function hover(ev) {
    const rect = canvas.getBoundingClientRect();
    const px = ev.clientX - rect.left, py = ev.clientY - rect.top;
    const it = itemAt(py);
    if (!it || !it.row || px < 0 || px > W) { tooltip.hidden = true; return; }
    const r = it.row, l = level(), bw = D.bucket_ns * Math.pow(2, l), lv = levelOf(r, l);
    const i = Math.floor(tOf(px) / bw), k = runAt(lv.start, lv.st.length, i);
    if (k < 0 || lv.st[k] === NO_DATA) { tooltip.hidden = true; return; }
    const pal = STATES[r.kind], st = lv.st[k];
    const a = i * bw, b = a + bw;
    const ns = sharesOver(r, a, b);
    let html = '<b>' + esc(r.label) + '</b><br>' +
      '<span class="sw" style="background:' + (pal[st] ? pal[st][1] : '#fff') + '"></span>' +
      esc(pal[st] ? pal[st][0] : '?') + ' (dominant)<br>' +
      fmtT(a) + ' \u2013 ' + fmtT(b) + ' (' + fmtDur(bw) + ')<br>';
    const detail = sharesText(r, ns);
    if (detail) html += detail + '<br>';
    html += 'slices beginning here: ' + lv.cnt[k] + '<br>';
    if (lv.who[k]) html += 'longest: ' + esc(D.names[lv.who[k]] || '?');
    tooltip.innerHTML = html;
    tooltip.hidden = false;
    const tx = Math.min(ev.pageX + 14, document.documentElement.scrollWidth - 340);
    tooltip.style.left = tx + 'px';
    tooltip.style.top = (ev.pageY + 14) + 'px';
  }

  /* ---- the selection's statistics ---- */

  /* The drill-down (serve.js: served, or a static page holding its exact intervals) follows
   * a selection made here: its range statistics and the exit histograms show it. A page of
   * the summary alone has no exits per range: its histograms say they are the whole trace's. */
  const T0 = Number(D.t0_ns);
  function tellSelection() {
    document.dispatchEvent(new CustomEvent('vms-select',
      { detail: sel ? { a: Math.floor(T0 + sel.a), b: Math.ceil(T0 + sel.b) } : null }));
    if (window.vmsDrill) return;
    const ex = document.getElementById('exits');
    let note = document.getElementById('exits-range');
    if (!ex) return;
    if (!sel) { if (note) note.remove(); return; }
    if (!note) {
      note = document.createElement('p');
      note.id = 'exits-range';
      note.className = 'warn';
      ex.insertBefore(note, ex.children[1] || null);
    }
    note.textContent = 'These histograms are of the whole trace, not of the selection ' + fmtT(sel.a) +
      ' \u2013 ' + fmtT(sel.b) + ': this page holds the summary, not the VM exits of a range. ' +
      'vmscope serve (or a page of a trace within the budget of exact intervals) shows a range\'s.';
  }

  function showSelection() {
    tellSelection();
    if (!sel) { selBox.innerHTML = ''; return; }
    let html = '<h3>Selected ' + fmtT(sel.a) + ' \u2013 ' + fmtT(sel.b) + ' (' +
      fmtDur(sel.b - sel.a) + ')</h3><table><tr><th>row</th><th>slices</th><th>time by state</th></tr>';
    for (const it of items) {
      if (!it.row) continue;
      const ns = sharesOver(it.row, sel.a, sel.b), txt = sharesText(it.row, ns);
      if (!txt) continue;
      html += '<tr><td>' + esc(it.row.label) + '</td><td>' +
        slicesOver(it.row, sel.a, sel.b) + '</td><td>' + txt + '</td></tr>';
    }
    html += '</table><p class="note">From the finest level of the summary: exact to one bucket (' +
      fmtDur(D.bucket_ns) + ') at each end of the selection.</p>';
    selBox.innerHTML = html;
  }

  /* ---- input ---- */

  function zoom(factor, px) {
    const t = tOf(px === undefined ? W / 2 : px);
    v0 = t - (t - v0) * factor;
    v1 = t + (v1 - t) * factor;
    clampView();
    redraw();
  }
  function pan(frac) {
    const d = (v1 - v0) * frac;
    v0 += d;
    v1 += d;
    clampView();
    redraw();
  }
  canvas.addEventListener('wheel', (ev) => {
    ev.preventDefault();
    if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      pan((ev.deltaX || ev.deltaY) / 1000);
    } else {
      const rect = canvas.getBoundingClientRect();
      zoom(Math.pow(1.2, ev.deltaY / 100), ev.clientX - rect.left);
    }
  }, { passive: false });
  axis.addEventListener('wheel', (ev) => { ev.preventDefault(); pan((ev.deltaX || ev.deltaY) / 1000); },
    { passive: false });
  document.addEventListener('keydown', (ev) => {
    if (ev.target && /INPUT|TEXTAREA/.test(ev.target.tagName)) return;
    const k = ev.key;
    if (k === '+' || k === '=' || k === 'w') zoom(1 / 1.5);
    else if (k === '-' || k === 's') zoom(1.5);
    else if (k === 'ArrowLeft' || k === 'a') pan(-0.2);
    else if (k === 'ArrowRight' || k === 'd') pan(0.2);
    else if (k === '0' || k === 'Home') { v0 = full0; v1 = full1; redraw(); }
    else if (k === 'Escape') { sel = null; showSelection(); redraw(); }
    else return;
    ev.preventDefault();
  });
  canvas.addEventListener('mousedown', (ev) => {
    if (ev.button !== 0) return;
    const rect = canvas.getBoundingClientRect(), x = ev.clientX - rect.left;
    drag = { kind: 'select', x0: x, t0: tOf(x) };
    ev.preventDefault();
  });
  axis.addEventListener('mousedown', (ev) => {
    if (ev.button !== 0) return;
    drag = { kind: 'pan', x0: ev.clientX, v0: v0, v1: v1 };
    ev.preventDefault();
  });
  window.addEventListener('mousemove', (ev) => {
    if (drag && drag.kind === 'pan') {
      const d = (ev.clientX - drag.x0) / W * (drag.v1 - drag.v0);
      v0 = drag.v0 - d;
      v1 = drag.v1 - d;
      clampView();
      redraw();
    } else if (drag && drag.kind === 'select') {
      const rect = canvas.getBoundingClientRect(), x = ev.clientX - rect.left;
      if (Math.abs(x - drag.x0) >= 3) {
        const t = Math.max(full0, Math.min(full1, tOf(Math.max(0, Math.min(W, x)))));
        sel = { a: Math.min(t, drag.t0), b: Math.max(t, drag.t0) };
        redraw();
      }
    }
  });
  window.addEventListener('mouseup', (ev) => {
    if (!drag) return;
    if (drag.kind === 'select') {
      const rect = canvas.getBoundingClientRect(), x = ev.clientX - rect.left;
      if (Math.abs(x - drag.x0) < 3) sel = null;
      showSelection();
      redraw();
    }
    drag = null;
  });
  canvas.addEventListener('mousemove', hover);
  canvas.addEventListener('mouseleave', () => { tooltip.hidden = true; });
  window.addEventListener('resize', redraw);

  draw();
  /* when the page was ready (ms since navigation): the benchmark reads it */
  document.body.dataset.readyMs = performance.now().toFixed(1);
})();
