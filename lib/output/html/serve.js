/* vmscope HTML report, server mode (`vmscope serve`): the drill-down timeline. Embedded after
 * timeline.js only in a page the server makes (vms_html_page.serve); the static page has no
 * such script and asks nothing of anyone. It asks its own origin (the token of the page's
 * URL) for the window it shows (/api/window: exact intervals and VM exit slices, or per-pixel
 * sums), the events of the window (/api/events: the lines of `vmscope dump`) and searches
 * (/api/search). Keys (with the drill-down focused): wheel or +/- zoom, arrows pan, z zooms
 * to the selected slice, . and , the next/previous state change of the selected row,
 * m sets a marker at the cursor, Backspace / Shift+Backspace back/forward through past views,
 * Ctrl+F the search (Enter next, Shift+Enter previous). The view and the markers are kept in
 * the URL (#v=FROM,TO&m=T1,T2...), so a link opens the same view. */
(function () {
  'use strict';
  const token = new URLSearchParams(location.search).get('token') || '';
  const root = document.getElementById('drill');
  if (!root) return;
  const COLORS = {
    vcpu: { unknown: '#e8e8e8', idle: '#c4c4c4', running: '#2e9e3a', vmm: '#d7191c',
      preempted: '#8e2ab8', halted: '#f0a818' },
    pcpu: ['#e8e8e8', '#d6d6d6', '#3f74c8', '#2e9e3a'],
    thread: { vmm: '#d7191c', preempted: '#8e2ab8', halted: '#f0a818', running: '#2e9e3a' },
  };
  const VCPU_CATS = ['unknown', 'idle', 'running', 'vmm', 'preempted', 'halted'];
  const THREAD_CATS = ['', 'vmm', 'preempted', 'halted', 'running', ''];
  const ROW_H = 22, EXIT_H = 8, LABEL_W = 220;
  const canvas = document.getElementById('drill-canvas');
  const tip = document.getElementById('drill-tip');
  const details = document.getElementById('drill-details');
  const evlist = document.getElementById('drill-events');
  const status = document.getElementById('drill-status');
  const search = document.getElementById('drill-search');
  const markList = document.getElementById('drill-markers');
  let rows = [], first = 0, last = 1, v0 = 0, v1 = 1, data = null, seq = 0;
  let selRow = -1, selSlice = null, cursor = null, markers = [], back = [], fwd = [];
  let matches = [], matchIdx = -1, matchText = '';
  /* ranges: the selection (shift+drag), and the two stored for the comparison (Shift+A,
   * Shift+B); picked: the rows they are shown for (click one, ctrl+click more) */
  let range = null, rangeA = null, rangeB = null, dragSel = null, dragged = false;
  let picked = [], rangeStats = null, cmpStats = null, evTimes = [];
  const cmpBox = document.getElementById('drill-compare');
  const selBox = document.getElementById('drill-selstats');

  const local = localBackend();
  function api(path, params) {
    if (local) {
      try { return Promise.resolve(local(path, params)); } catch (e) { return Promise.reject(e); }
    }
    const q = new URLSearchParams(params);
    q.set('token', token);
    return fetch(path + '?' + q.toString()).then((r) => r.json().then((j) => {
      if (!r.ok) throw new Error(j.error || r.status);
      return j;
    }));
  }
  /* The static page (`vmscope html` within its budget) holds the exact intervals
   * (#vms-exact): the same questions are answered from them, with the server's answers'
   * shapes, so that the drill-down is one code for both pages. No events (dump's lines) nor
   * findings there: `vmscope serve` has them. */
  function localBackend() {
    const el = document.getElementById('vms-exact');
    if (!el || token) return null;
    const X = JSON.parse(el.textContent), D = JSON.parse(document.getElementById('vms-data').textContent);
    const t0 = Number(D.t0_ns);
    const VC = ['unknown', 'idle', 'running', 'vmm', 'preempted', 'halted'];
    const PC = ['unknown', 'host idle', 'host thread', 'hypervisor (vCPU thread)', 'guest thread', 'guest idle'];
    const PCOL = ['#e8e8e8', '#d6d6d6', '#3f74c8', '#d7191c', '#2e9e3a', '#9fd8a6'];
    const PCAT = [0, 1, 2, 2, 3, 3], TCAT = [0, 0, 4, 1, 2, 3];
    const CATS = { vcpu: VC, thread: ['', 'vmm', 'preempted', 'halted', 'running', ''],
      pcpu: ['unknown', 'host idle', 'host thread', 'guest', '', ''] };
    const rname = {};
    for (const [i, r, n] of X.reason_names) rname[i + ':' + r] = n;
    const R = D.rows.map((r, k) => {
      const p = X.rows[k] || [], keep = [];
      for (let j = 0; j + 3 < p.length; j += 4) if (!(r.kind === 'thread' && p[j + 2] === 1)) keep.push(j);
      keep.sort((a, b) => p[a] - p[b]);
      const o = { id: r.kind[0] + ':' + k, kind: r.kind, machine: r.machine, label: r.label,
        s: keep.map((j) => p[j]), e: keep.map((j) => p[j + 1]), st: keep.map((j) => p[j + 2]),
        who: keep.map((j) => p[j + 3]), x: [] };
      o[r.kind === 'vcpu' ? 'vcpu' : r.kind === 'pcpu' ? 'cpu' : 'tid'] = r.id;
      if (r.kind === 'thread') { const m = /^(.*) \((\d+)\)$/.exec(r.label); o.comm = m ? m[1] : r.label; }
      /* the longest piece so far before each: pieces of a row do not overlap, but the binary
       * search wants the ends in order too */
      return o;
    });
    for (const x of X.exits) if (R[x[0]]) R[x[0]].x.push(x);
    for (const r of R) r.x.sort((a, b) => a[1] - b[1]);
    let first = Infinity, last = 0;
    for (const r of R) if (r.s.length) { first = Math.min(first, r.s[0]); last = Math.max(last, r.e[r.e.length - 1]); }
    if (!isFinite(first)) { first = t0 + D.first_ns; last = t0 + D.end_ns; }
    const lower = (a, t) => { let lo = 0, hi = a.length; while (lo < hi) { const m = (lo + hi) >> 1; if (a[m] < t) lo = m + 1; else hi = m; } return lo; };
    /* the pieces of r overlapping [a, b): indices */
    function over(r, a, b) {
      const out = [];
      for (let j = Math.max(0, lower(r.e, a + 1) - 1); j < r.s.length && r.s[j] < b; j++) if (r.e[j] > a) out.push(j);
      return out;
    }
    const cat = (r, st) => (r.kind === 'vcpu' ? st : r.kind === 'thread' ? TCAT[st] : PCAT[st]);
    function exitsOver(r, a, b) {
      return r.x.filter((x) => x[1] < b && (typeof x[2] !== 'number' || x[2] > a));
    }
    function slice(x) {
      const ended = typeof x[2] === 'number', nm = rname[x[3] + ':' + x[4]] || String(x[4]);
      return { begin: x[1], end: ended ? x[2] : null, duration: ended ? x[2] - x[1] : null,
        how: ended ? 'ended' : x[2], isa: x[3], reason: x[4], name: nm, guest_rip: x[5], info1: x[6],
        info2: x[7], host_cpu: x[8], host_tid: x[9], guest_tid: x[10] };
    }
    function interval(r, j, a, b) {
      const iv = { start: Math.max(r.s[j], a), end: Math.min(r.e[j], b) }, st = r.st[j];
      if (r.kind === 'vcpu') iv.state = VC[st];
      else if (r.kind === 'thread') iv.reason = VC[st];
      else { iv.state = PC[st]; iv.color = PCOL[st]; }
      if (r.who[j]) iv.name = D.names[r.who[j]];
      return iv;
    }
    function hbin(ns) {
      if (ns < 2) return 0;
      let e = Math.floor(Math.log2(ns));
      if (Math.pow(2, e) > ns) e--;   /* log2 rounds up just below a power of two */
      const frac = Math.floor(ns / Math.pow(2, e - 2)) & 3;
      return Math.min(4 * e + frac, 159);
    }
    function window_(a, b, px) {
      const width = Math.ceil((b - a) / px), out = [];
      for (const r of R) {
        const js = over(r, a, b), o = { id: r.id, count: js.length, exact: js.length <= 2 * px };
        if (o.exact) o.intervals = js.map((j) => interval(r, j, a, b));
        else {
          o.categories = CATS[r.kind];
          o.pixels_ns = Array.from({ length: px }, () => [0, 0, 0, 0, 0, 0]);
          for (const j of js) {
            let s = Math.max(r.s[j], a);
            const e = Math.min(r.e[j], b), c = cat(r, r.st[j]);
            for (let p = Math.floor((s - a) / width); s < e && p < px; p++) {
              const pe = Math.min(a + (p + 1) * width, b), x = Math.min(e, pe);
              o.pixels_ns[p][c] += x - s;
              s = x;
            }
          }
        }
        if (r.kind === 'vcpu') {
          const xs = exitsOver(r, a, b);
          o.exits = { count: xs.length, exact: xs.length <= 2 * px };
          if (o.exits.exact) o.exits.slices = xs.map(slice);
          else {
            o.exits.pixels = new Array(px).fill(0);
            for (const x of xs) o.exits.pixels[Math.min(px - 1, Math.floor((Math.max(x[1], a) - a) / width))]++;
          }
        }
        if (o.count || (o.exits && o.exits.count)) out.push(o);
      }
      return { from: a, to: b, px: px, pixel_ns: width, rows_truncated: false, rows: out };
    }
    function stats(a, b) {
      const out = [];
      for (const r of R) {
        const js = over(r, a, b), ns = [0, 0, 0, 0, 0, 0];
        for (const j of js) ns[cat(r, r.st[j])] += Math.min(r.e[j], b) - Math.max(r.s[j], a);
        const o = { id: r.id, kind: r.kind, intervals: js.length, categories: CATS[r.kind], state_ns: ns };
        if (r.kind === 'vcpu') {
          /* as `exits --from --to` counts them: every exit the range holds a part of, ended
           * in it (its whole duration), or unfinished at its end */
          const by = {};
          for (const x of r.x) {
            if (x[1] >= b || (typeof x[2] === 'number' && x[2] < a)) continue;
            const k = x[3] + ':' + x[4], ended = typeof x[2] === 'number' && x[2] < b;
            const e = by[k] || (by[k] = { isa: x[3], reason: x[4], name: rname[k] || String(x[4]), count: 0,
              ended: 0, unfinished: 0, lost: 0, total_ns: 0, min_ns: null, max_ns: null, b: {} });
            e.count++;
            if (!ended) { e[typeof x[2] === 'number' ? 'unfinished' : x[2]]++; continue; }
            const d = x[2] - x[1];
            e.ended++;
            e.total_ns += d;
            e.min_ns = e.min_ns === null ? d : Math.min(e.min_ns, d);
            e.max_ns = e.max_ns === null ? d : Math.max(e.max_ns, d);
            e.b[hbin(d)] = (e.b[hbin(d)] || 0) + 1;
          }
          o.other_reasons_exits = 0;
          o.exits = Object.values(by).sort((p, q) => q.count - p.count || p.reason - q.reason).map((e) => {
            e.bins = Object.keys(e.b).map(Number).sort((p, q) => p - q).map((k) => [k, e.b[k]]);
            delete e.b;
            return e;
          });
        }
        if (js.length || (o.exits && o.exits.length)) out.push(o);
      }
      return { from: a, to: b, rows_truncated: false, rows: out };
    }
    function search(q, max) {
      const m = [], num = /^\d+$/.test(q) ? Number(q) : null;
      for (const r of R) {
        if (r.kind === 'thread' && (r.comm === q || r.tid === num))
          for (let j = 0; j < r.s.length; j++)
            if (j === 0 || r.s[j] !== r.e[j - 1]) m.push({ t: r.s[j], row: r.id, what: r.label + ' switched in' });
        if (r.kind === 'vcpu')
          for (const x of r.x) {
            const nm = rname[x[3] + ':' + x[4]] || '';
            if (nm.toLowerCase() === q.toLowerCase() || x[4] === num) m.push({ t: x[1], row: r.id, what: 'kvm_exit ' + (nm || x[4]) });
          }
      }
      m.sort((p, q2) => p.t - q2.t);
      return { matches: m.slice(0, max), truncated: m.length > max };
    }
    const int = (p, k) => { const v = Number(p[k]); if (!Number.isSafeInteger(v) || v < 0) throw new Error(k + ': an integer'); return v; };
    return function (path, p) {
      if (path === '/api/rows')
        return { first: first, last: last, events: D.events, rows_truncated: false,
          rows: R.map((r) => { const o = { id: r.id, kind: r.kind, machine: r.machine, label: r.label };
            for (const k of ['vcpu', 'cpu', 'tid', 'comm']) if (r[k] !== undefined) o[k] = r[k]; return o; }) };
      if (path === '/api/findings') return { findings: null };
      if (path === '/api/events') return { lines: [], static: true };
      if (path === '/api/search') return search(String(p.q || ''), Number(p.max) || 1000);
      const a = int(p, 'from'), b = int(p, 'to');
      if (a >= b) throw new Error('from < to');
      if (path === '/api/window') return window_(a, b, Math.max(1, Math.min(4096, int(p, 'px'))));
      if (path === '/api/stats') return stats(a, b);
      throw new Error('no such question: ' + path);
    };
  }
  function fmtT(t) { return String(Math.round(t)) + ' ns'; }
  function rel(t) {
    const d = t - first;
    if (d >= 1e9) return '+' + (d / 1e9).toFixed(9) + ' s';
    if (d >= 1e6) return '+' + (d / 1e6).toFixed(6) + ' ms';
    return '+' + (d / 1e3).toFixed(3) + ' us';
  }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;',
      '"': '&quot;', "'": '&#39;' })[c]);
  }
  function W() { return Math.max(100, canvas.clientWidth - LABEL_W); }
  function xOf(t) { return LABEL_W + (t - v0) / (v1 - v0) * W(); }
  function tOf(x) { return v0 + (x - LABEL_W) / W() * (v1 - v0); }

  function saveHash() {
    const h = 'v=' + Math.round(v0) + ',' + Math.round(v1) +
      (markers.length ? '&m=' + markers.map((m) => Math.round(m)).join(',') : '');
    history.replaceState(null, '', '#' + h);
  }
  function readHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    const v = (h.get('v') || '').split(',').map(Number);
    if (v.length === 2 && isFinite(v[0]) && isFinite(v[1]) && v[0] < v[1]) { v0 = v[0]; v1 = v[1]; }
    markers = (h.get('m') || '').split(',').filter((x) => x).map(Number).filter(isFinite);
  }

  function setView(a, b, remember) {
    const min = 100;   /* ns: below that a pixel is a fraction of an event */
    if (b - a < min) { const c = (a + b) / 2; a = c - min / 2; b = c + min / 2; }
    a = Math.max(first, a); b = Math.min(last + 1, b);
    if (a >= b) return;
    if (remember) { back.push([v0, v1]); fwd = []; }
    v0 = a; v1 = b;
    saveHash();
    draw();
    fetchWindow();
  }

  let timer = null;
  function fetchWindow() {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const my = ++seq;
      const a = Math.floor(v0), b = Math.ceil(v1);
      /* the current match stays said while its window is asked for */
      status.textContent = (matchText ? matchText + '; ' : '') + 'asking the server for [' + a + ', ' + b + ') ns...';
      api('/api/window', { from: a, to: b, px: Math.min(4096, W()) }).then((j) => {
        if (my !== seq) return;
        data = j;
        data.byId = {};
        for (const r of j.rows) data.byId[r.id] = r;
        /* a wide window from the index's summaries: its rows' pixels are right to a bucket */
        status.textContent = (matchText ? matchText + '; ' : '') + 'window [' + j.from + ', ' + j.to +
          ') ns, ' + j.pixel_ns + ' ns per pixel' +
          (j.summary_ns ? ' (from the summaries: buckets of ' + j.summary_ns + ' ns)' : '');
        draw();
        fetchEvents(a, b, my);
      }).catch((e) => { if (my === seq) status.textContent = 'the server refused: ' + e.message; });
    }, 60);
  }
  function fetchEvents(a, b, my) {
    api('/api/events', { from: a, to: b, limit: 200 }).then((j) => {
      if (my !== seq) return;
      if (j.static) {
        evTimes = [];
        evlist.innerHTML = '<div class="note">The events themselves (the lines of <code>vmscope dump</code>) ' +
          'are not in this page: <code>vmscope serve</code> lists those of any window.</div>';
        return;
      }
      evTimes = j.lines.map(lineTime);
      evlist.innerHTML = j.lines.map((l, k) => '<div class="ev" data-k="' + k + '">' + esc(l) +
        '</div>').join('') +
        (j.lines.length >= 200 ? '<div class="note">the first 200 events of the window</div>' : '');
      markEvent();
    }).catch(() => {});
  }

  /* the reference ns of a line of dump ("22149.948193 ..." seconds, to the microsecond);
   * null when the line has no such time (a cycle count, simpletrace) */
  function lineTime(l) {
    const m = /^(\d+)\.(\d{6}) /.exec(l);
    return m ? Number(m[1]) * 1e9 + Number(m[2]) * 1e3 : null;
  }
  /* the line at or just before the cursor is marked, and scrolled into the list's view */
  function markEvent() {
    let best = -1;
    if (cursor !== null)
      for (let k = 0; k < evTimes.length; k++) if (evTimes[k] !== null && evTimes[k] <= cursor + 500) best = k;
    for (const e of evlist.querySelectorAll('.ev.cur')) e.classList.remove('cur');
    const el = best >= 0 ? evlist.querySelector('.ev[data-k="' + best + '"]') : null;
    if (el) {
      el.classList.add('cur');
      const top = el.offsetTop - evlist.offsetTop;
      if (top < evlist.scrollTop || top > evlist.scrollTop + evlist.clientHeight - el.offsetHeight)
        evlist.scrollTop = top - evlist.clientHeight / 2;
    }
  }
  evlist.addEventListener('click', (ev) => {
    const el = ev.target.closest && ev.target.closest('.ev');
    if (!el) return;
    const t = evTimes[Number(el.dataset.k)];
    if (t === null || t === undefined) return;
    cursor = t;
    status.textContent = 'cursor at ' + fmtT(t) + ' (' + rel(t) + '), the event clicked';
    if (t < v0 || t >= v1) { const h = (v1 - v0) / 2; setView(t - h, t + h, true); } else draw();
    markEvent();
    root.focus();
  });

  function colorOf(kind, iv) {
    if (iv.color) return iv.color;
    if (kind === 'vcpu') return COLORS.vcpu[iv.state] || '#000';
    if (kind === 'thread') return COLORS.thread[iv.reason] || '#000';
    if (iv.machine !== undefined) return COLORS.pcpu[3];
    return COLORS.pcpu[iv.tid < 0 ? 0 : iv.tid === 0 ? 1 : 2];
  }
  function sumColor(kind, px) {
    let best = -1, bi = 0;
    for (let c = 0; c < px.length; c++) if (px[c] > best) { best = px[c]; bi = c; }
    if (best <= 0) return null;
    if (kind === 'vcpu') return COLORS.vcpu[VCPU_CATS[bi]];
    if (kind === 'thread') return COLORS.thread[THREAD_CATS[bi]] || '#000';
    return COLORS.pcpu[bi];
  }
  function rowY(i) { return 20 + i * (ROW_H + EXIT_H + 2); }

  function draw() {
    const dpr = window.devicePixelRatio || 1;
    const h = rowY(rows.length) + 4;
    canvas.style.height = h + 'px';
    canvas.width = Math.round(canvas.clientWidth * dpr);
    canvas.height = Math.round(h * dpr);
    const g = canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, canvas.clientWidth, h);
    g.font = '11px sans-serif';
    g.fillStyle = '#333';
    g.fillText(rel(v0), LABEL_W, 12);
    const r1 = rel(v1);
    g.fillText(r1, LABEL_W + W() - g.measureText(r1).width, 12);
    rows.forEach((r, i) => {
      const y = rowY(i);
      g.fillStyle = i === selRow ? '#ffe9a8' : '#fff';
      g.fillRect(0, y, LABEL_W - 4, ROW_H);
      g.fillStyle = '#222';
      g.fillText(r.label, 4, y + 15);
      const d = data && data.byId[r.id];
      if (!d) return;
      if (d.exact) {
        for (const iv of d.intervals) {
          const x0 = Math.max(LABEL_W, xOf(iv.start)), x1 = Math.min(LABEL_W + W(), xOf(iv.end));
          if (x1 <= LABEL_W || x0 >= LABEL_W + W()) continue;
          g.fillStyle = colorOf(r.kind, iv);
          g.fillRect(x0, y, Math.max(1, x1 - x0), ROW_H);
        }
      } else {
        const pw = W() / d.pixels_ns.length;
        d.pixels_ns.forEach((px, p) => {
          const c = sumColor(r.kind, px);
          if (!c) return;
          g.fillStyle = c;
          g.fillRect(LABEL_W + p * pw, y, Math.max(1, pw), ROW_H);
        });
      }
      if (d.exits && d.exits.exact) {
        for (const x of d.exits.slices) {
          const e = x.end === null ? v1 : x.end;
          const x0 = xOf(x.begin), x1 = xOf(e);
          if (x1 < LABEL_W || x0 > LABEL_W + W()) continue;
          g.fillStyle = selSlice && selSlice.x === x ? '#000' : '#7a0c0e';
          g.fillRect(Math.max(LABEL_W, x0), y + ROW_H + 1, Math.max(1, x1 - x0), EXIT_H);
        }
      } else if (d.exits) {
        const pw = W() / d.exits.pixels.length;
        g.fillStyle = '#c98b8c';
        d.exits.pixels.forEach((c, p) => { if (c) g.fillRect(LABEL_W + p * pw, y + ROW_H + 1, Math.max(1, pw), EXIT_H); });
      }
    });
    for (const [r, c, name] of [[rangeA, 'rgba(230,120,0,0.13)', 'A'], [rangeB, 'rgba(0,150,150,0.13)', 'B'],
      [range, 'rgba(30,90,200,0.18)', '']]) {
      if (!r || r.b <= v0 || r.a >= v1) continue;
      const x0 = Math.max(LABEL_W, xOf(r.a)), x1 = Math.min(LABEL_W + W(), xOf(r.b));
      g.fillStyle = c;
      g.fillRect(x0, 14, Math.max(1, x1 - x0), h - 14);
      if (name) { g.fillStyle = '#333'; g.fillText(name, x0 + 2, 24); }
    }
    for (const m of markers) line(g, m, '#0057d8', h);
    if (cursor !== null) line(g, cursor, '#000', h);
    for (let k = 0; k < matches.length; k++) if (matches[k].t >= v0 && matches[k].t < v1) {
      g.fillStyle = k === matchIdx ? '#ff00c8' : '#ff9de8';
      g.fillRect(xOf(matches[k].t) - 1, 14, 3, 6);
    }
    markList.innerHTML = markers.map((m, k) => '<a href="#" data-m="' + k + '">marker ' + (k + 1) +
      ' ' + esc(rel(m)) + '</a>').join(' ');
  }
  function line(g, t, c, h) {
    if (t < v0 || t >= v1) return;
    g.fillStyle = c;
    g.fillRect(xOf(t), 14, 1, h);
  }

  /* what is under the mouse: an exit slice, else an interval */
  function hit(ev) {
    const b = canvas.getBoundingClientRect();
    const x = ev.clientX - b.left, y = ev.clientY - b.top;
    if (x < LABEL_W) return null;
    const i = Math.floor((y - 20) / (ROW_H + EXIT_H + 2));
    if (i < 0 || i >= rows.length || !data) return { t: tOf(x) };
    const r = rows[i], d = data.byId[r.id], t = tOf(x);
    const slack = (v1 - v0) / W() * 2;
    const res = { row: i, t: t };
    if (!d) return res;
    const inExit = y - rowY(i) > ROW_H;
    if (d.exits && d.exits.exact && inExit) {
      /* the slice under the mouse, else the nearest within 2 pixels */
      let best = null, bd = Infinity;
      for (const s of d.exits.slices) {
        const e = s.end === null ? v1 : s.end;
        const dist = t < s.begin ? s.begin - t : t >= e ? t - e : -1;
        if (dist <= slack && dist < bd) { best = s; bd = dist; }
      }
      if (best) { res.x = best; return res; }
    }
    if (d.exact) for (const iv of d.intervals) if (t >= iv.start && t < iv.end) { res.iv = iv; break; }
    return res;
  }
  function describe(h, full) {
    const r = rows[h.row];
    if (h.x) {
      const s = h.x;
      const f = [['row', r.label], ['VM exit', s.name + ' (reason ' + s.reason + ', isa ' +
        (s.isa === 1 ? 'VMX' : s.isa === 2 ? 'SVM' : '?') + ')'], ['begin', fmtT(s.begin)],
        ['end', s.end === null ? 'not in the window (' + s.how + ')' : fmtT(s.end)],
        ['duration', s.duration === null ? 'unknown' : fmtT(s.duration)], ['guest RIP', s.guest_rip],
        ['info1', s.info1], ['info2', s.info2], ['host CPU', s.host_cpu], ['host thread', s.host_tid],
        ['guest thread', s.guest_tid < 0 ? 'unknown' : s.guest_tid]];
      return f;
    }
    if (h.iv) {
      const f = [['row', r.label], ['start', fmtT(h.iv.start)], ['end', fmtT(h.iv.end)],
        ['duration', fmtT(h.iv.end - h.iv.start)]];
      for (const k in h.iv) if (k !== 'start' && k !== 'end') f.push([k, h.iv[k]]);
      return f;
    }
    return full ? [['row', r.label], ['time', fmtT(h.t)], ['note', 'a summary here: zoom in']] : null;
  }
  function table(f) {
    return '<table>' + f.map((p) => '<tr><th>' + esc(p[0]) + '</th><td>' + esc(p[1]) + '</td></tr>').join('') + '</table>';
  }
  canvas.addEventListener('mousemove', (ev) => {
    const h = hit(ev);
    const f = h && h.row !== undefined ? describe(h, false) : null;
    if (!f) { tip.hidden = true; return; }
    tip.innerHTML = table(f);
    tip.hidden = false;
    tip.style.left = (ev.pageX + 12) + 'px';
    tip.style.top = (ev.pageY + 12) + 'px';
  });
  canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
  canvas.addEventListener('mousedown', (ev) => {
    if (ev.button !== 0 || !ev.shiftKey) return;
    const b = canvas.getBoundingClientRect();
    dragSel = { t0: tOf(ev.clientX - b.left), x0: ev.clientX };
    dragged = false;
    ev.preventDefault();
  });
  window.addEventListener('mousemove', (ev) => {
    if (!dragSel || Math.abs(ev.clientX - dragSel.x0) < 3) return;
    const b = canvas.getBoundingClientRect();
    const t = Math.max(v0, Math.min(v1, tOf(Math.max(LABEL_W, ev.clientX - b.left))));
    range = { a: Math.round(Math.min(t, dragSel.t0)), b: Math.round(Math.max(t, dragSel.t0)) };
    dragged = true;
    draw();
  });
  window.addEventListener('mouseup', () => {
    if (!dragSel) return;
    dragSel = null;
    if (dragged && range && range.b > range.a) setRange(range.a, range.b);
  });
  canvas.addEventListener('click', (ev) => {
    root.focus();
    if (dragged) { dragged = false; return; }
    const h = hit(ev);
    if (!h) return;
    cursor = h.t;
    markEvent();
    if (h.row !== undefined) {
      if (ev.ctrlKey || ev.metaKey) {
        const k = picked.indexOf(h.row);
        if (k >= 0) picked.splice(k, 1); else picked.push(h.row);
      } else picked = [h.row];
      selRow = h.row;
      showStats();
      const f = describe(h, true);
      selSlice = h.x ? { x: h.x, begin: h.x.begin, end: h.x.end } : h.iv ? { begin: h.iv.start, end: h.iv.end } : null;
      details.innerHTML = '<h3>Details</h3>' + table(f);
    }
    draw();
  });
  canvas.addEventListener('wheel', (ev) => {
    ev.preventDefault();
    const b = canvas.getBoundingClientRect();
    const t = tOf(ev.clientX - b.left);
    const k = ev.deltaY > 0 ? 1.25 : 0.8;
    setView(t - (t - v0) * k, t + (v1 - t) * k, false);
  }, { passive: false });

  function zoom(k) { const c = (v0 + v1) / 2, h = (v1 - v0) * k / 2; setView(c - h, c + h, false); }
  function pan(f) { const d = (v1 - v0) * f; setView(v0 + d, v1 + d, false); }
  /* the next (dir 1) or previous (-1) state change of the selected row after the cursor */
  function stateChange(dir) {
    if (selRow < 0 || !data) return;
    const d = data.byId[rows[selRow].id];
    if (!d || !d.exact) return;
    const t = cursor === null ? (dir > 0 ? v0 : v1) : cursor;
    const edges = [];
    for (const iv of d.intervals) edges.push(iv.start, iv.end);
    edges.sort((a, b) => a - b);
    let n = null;
    if (dir > 0) { for (const e of edges) if (e > t) { n = e; break; } } else { for (let i = edges.length - 1; i >= 0; i--) if (edges[i] < t) { n = edges[i]; break; } }
    if (n === null) return;
    cursor = n;
    if (n < v0 || n >= v1) { const h = (v1 - v0) / 2; setView(n - h, n + h, true); } else draw();
  }
  function goMatch(dir) {
    if (!matches.length) return;
    matchIdx = (matchIdx + dir + matches.length) % matches.length;
    const m = matches[matchIdx];
    cursor = m.t;
    const idx = rows.findIndex((r) => r.id === m.row);
    if (idx >= 0) selRow = idx;
    const h = Math.min(v1 - v0, 2e6) / 2;
    setView(m.t - h, m.t + h, true);
    matchText = 'match ' + (matchIdx + 1) + ' of ' + matches.length + ': ' + m.what + ' at ' + fmtT(m.t);
    status.textContent = matchText;
  }
  search.addEventListener('keydown', (ev) => {
    ev.stopPropagation();
    if (ev.key !== 'Enter') return;
    ev.preventDefault();
    if (search.value !== search.dataset.done) {
      search.dataset.done = search.value;
      api('/api/search', { q: search.value, max: 10000 }).then((j) => {
        matches = j.matches;
        matchIdx = ev.shiftKey ? 0 : -1;
        if (!matches.length) { status.textContent = 'no match for ' + search.value; draw(); return; }
        goMatch(ev.shiftKey ? -1 : 1);
      }).catch((e) => { status.textContent = 'search refused: ' + e.message; });
    } else goMatch(ev.shiftKey ? -1 : 1);
  });
  document.addEventListener('keydown', (ev) => {
    if ((ev.ctrlKey || ev.metaKey) && ev.key === 'f') { ev.preventDefault(); search.focus(); search.select(); }
  });
  root.addEventListener('keydown', (ev) => {
    if (ev.target === search) return;
    let used = true;
    if (ev.key === '+' || ev.key === '=' || ev.key === 'w') zoom(0.5);
    else if (ev.key === '-' || ev.key === 's') zoom(2);
    else if (ev.key === 'ArrowLeft' || ev.key === 'a') pan(-0.2);
    else if (ev.key === 'ArrowRight' || ev.key === 'd') pan(0.2);
    else if (ev.key === '0') setView(first, last + 1, true);
    else if (ev.key === '.') stateChange(1);
    else if (ev.key === ',') stateChange(-1);
    else if (ev.key === 'z' && selSlice) {
      const e = selSlice.end === null ? selSlice.begin + 1000 : selSlice.end;
      const pad = Math.max(50, (e - selSlice.begin) * 0.25);
      setView(selSlice.begin - pad, e + pad, true);
    } else if (ev.key === 'A' || ev.key === 'B') {
      /* the selection (else the view) stored as range A or B */
      const r = range ? { a: range.a, b: range.b } : { a: Math.floor(v0), b: Math.ceil(v1) };
      if (ev.key === 'A') rangeA = r; else rangeB = r;
      compare();
      draw();
    } else if (ev.key === 'Escape' && range) { range = null; rangeStats = null; showStats(); draw(); }
    else if (ev.key === 'm' && cursor !== null) { markers.push(cursor); saveHash(); draw(); }
    else if (ev.key === 'Backspace' && !ev.shiftKey && back.length) { fwd.push([v0, v1]); const p = back.pop(); setView(p[0], p[1], false); }
    else if (ev.key === 'Backspace' && ev.shiftKey && fwd.length) { back.push([v0, v1]); const p = fwd.pop(); setView(p[0], p[1], false); }
    else used = false;
    if (used) { ev.preventDefault(); ev.stopPropagation(); }
  });
  markList.addEventListener('click', (ev) => {
    const k = ev.target.dataset && ev.target.dataset.m;
    if (k === undefined) return;
    ev.preventDefault();
    const m = markers[Number(k)], h = (v1 - v0) / 2;
    cursor = m;
    setView(m - h, m + h, true);
  });
  window.addEventListener('resize', () => { draw(); fetchWindow(); });

  /* ---- the statistics of a range: the selection, and ranges A and B side by side ---- */

  const rowById = () => { const o = {}; for (const r of rows) o[r.id] = r; return o; };
  function pct(ns, span) { return (100 * ns / span).toFixed(2) + ' %'; }
  /* the lower edge of histogram bin b: 2^(b/4) ns, as the page's "VM exit latency" */
  function binNs(b) { return Math.pow(2, b >> 2) * [1, 1.189207115, 1.414213562, 1.681792831][b & 3]; }
  function fmtD(ns) {
    if (ns < 1e3) return ns.toFixed(0) + ' ns';
    if (ns < 1e6) return (ns / 1e3).toPrecision(3) + ' us';
    if (ns < 1e9) return (ns / 1e6).toPrecision(3) + ' ms';
    return (ns / 1e9).toPrecision(4) + ' s';
  }
  /* an exit-duration histogram as the page draws them; lo/hi: the bins shown (shared by the
   * two ranges of a comparison so that their bars line up) */
  function histSvg(bins, lo, hi, title) {
    const Wd = 300, H = 70, nb = hi - lo + 1, bw = Wd / nb;
    let peak = 0;
    for (const [, c] of bins) peak = Math.max(peak, c);
    let svg = '<svg width="' + Wd + '" height="' + (H + 14) + '" role="img">';
    for (const [b, c] of bins) {
      const bh = Math.max(1, H * c / peak);
      svg += '<rect x="' + ((b - lo) * bw).toFixed(1) + '" y="' + (H - bh).toFixed(1) + '" width="' +
        Math.max(bw - 0.5, 0.5).toFixed(1) + '" height="' + bh.toFixed(1) + '"><title>' +
        fmtD(binNs(b)) + ' - ' + fmtD(binNs(b + 1)) + ': ' + c + '</title></rect>';
    }
    svg += '<text x="0" y="' + (H + 12) + '">' + fmtD(binNs(lo)) + '</text><text x="' + Wd + '" y="' +
      (H + 12) + '" text-anchor="end">' + fmtD(binNs(hi + 1)) + '</text></svg>';
    return '<figure class="hist"><figcaption>' + title + '</figcaption>' + (peak ? svg : '') + '</figure>';
  }
  function binRange(lists) {
    let lo = Infinity, hi = -Infinity;
    for (const l of lists) for (const [b] of l) { lo = Math.min(lo, b); hi = Math.max(hi, b); }
    return lo <= hi ? [lo, hi] : [0, 0];
  }
  /* per row: time by state (ns and % of the range), exits by reason, their histograms; one
   * range, or two side by side with B - A */
  function statsHtml(list, names, ids) {
    const by = list.map((st) => { const o = {}; for (const r of st.rows) o[r.id] = r; return o; });
    const spans = list.map((st) => st.to - st.from), two = list.length === 2;
    const info = rowById();
    let html = '';
    for (const id of ids) {
      const rs = by.map((o) => o[id]);
      if (!rs.some((r) => r)) continue;
      const r0 = rs.find((r) => r);
      html += '<div class="rowstats" data-row="' + esc(id) + '"><h4>' + esc(info[id] ? info[id].label : id) + '</h4>';
      html += '<table class="stats"><tr><th>state</th>' + names.map((n) => '<th>' + n + ' ns</th><th>' + n +
        ' %</th>').join('') + (two ? '<th>B \u2212 A ns</th><th>B \u2212 A %</th>' : '') + '</tr>';
      r0.categories.forEach((c, k) => {
        const ns = rs.map((r) => (r ? r.state_ns[k] : 0));
        if (!c || !ns.some((x) => x)) return;
        html += '<tr data-state="' + esc(c) + '"><td>' + esc(c) + '</td>' + ns.map((x, i) => '<td class="ns">' + x +
          '</td><td>' + pct(x, spans[i]) + '</td>').join('') + (two ? '<td class="ns">' + (ns[1] - ns[0]) +
          '</td><td>' + (100 * ns[1] / spans[1] - 100 * ns[0] / spans[0]).toFixed(2) + '</td>' : '') + '</tr>';
      });
      html += '</table>';
      if (r0.kind === 'vcpu') {
        const reasons = [];
        for (const r of rs) for (const x of (r ? r.exits : [])) if (!reasons.includes(x.name)) reasons.push(x.name);
        const ex = rs.map((r) => { const o = {}; for (const x of (r ? r.exits : [])) o[x.name] = x; return o; });
        html += '<table class="stats exits"><tr><th>exit reason</th>' + names.map((n) => '<th>' + n +
          ' exits</th><th>' + n + ' mean</th>').join('') + (two ? '<th>B \u2212 A exits</th>' : '') + '</tr>';
        for (const nm of reasons) {
          const xs = ex.map((o) => o[nm]);
          html += '<tr data-reason="' + esc(nm) + '"><td>' + esc(nm) + '</td>' + xs.map((x) => '<td class="n">' +
            (x ? x.count : 0) + '</td><td>' + (x && x.ended ? fmtD(x.total_ns / x.ended) : '\u2013') + '</td>').join('') +
            (two ? '<td class="n">' + ((xs[1] ? xs[1].count : 0) - (xs[0] ? xs[0].count : 0)) + '</td>' : '') + '</tr>';
        }
        html += '</table><div class="hists">';
        for (const nm of reasons.slice(0, 4)) {
          const xs = ex.map((o) => o[nm]);
          const [lo, hi] = binRange(xs.map((x) => (x ? x.bins : [])));
          html += xs.map((x, i) => histSvg(x ? x.bins : [], lo, hi, '<b>' + esc(nm) + '</b> ' + names[i] +
            ': ' + (x ? x.ended : 0) + ' ended exits')).join('');
        }
        html += '</div>';
      }
      html += '</div>';
    }
    return html || '<p class="note">Nothing in the range for these rows.</p>';
  }
  function shownIds() {
    if (picked.length) return picked.map((i) => rows[i].id);
    return rows.filter((r) => r.kind === 'vcpu').map((r) => r.id);
  }
  function rangeText(r) { return '[' + r.a + ', ' + r.b + ') ns (' + rel(r.a) + ', ' + fmtD(r.b - r.a) + ')'; }
  function compare() {
    if (!cmpBox) return;
    if (!rangeA || !rangeB) {
      cmpBox.innerHTML = '<h3>Ranges compared</h3><p class="note">' + (rangeA ? 'A: ' + rangeText(rangeA) +
        '. ' : '') + 'Select a range (shift+drag) or a view, then <kbd>Shift</kbd>+<kbd>A</kbd> stores it ' +
        'as range A and <kbd>Shift</kbd>+<kbd>B</kbd> as range B.</p>';
      return;
    }
    const a = rangeA, b = rangeB;
    cmpBox.innerHTML = '<h3>Ranges compared</h3><p class="note">asking the server...</p>';
    Promise.all([api('/api/stats', { from: a.a, to: a.b }), api('/api/stats', { from: b.a, to: b.b })])
      .then(([sa, sb]) => {
        if (a !== rangeA || b !== rangeB) return;
        cmpStats = [sa, sb];
        renderCompare();
      }).catch((e) => { cmpBox.innerHTML = '<h3>Ranges compared</h3><p class="warn">the server refused: ' + esc(e.message) + '</p>'; });
  }
  function renderCompare() {
    if (!cmpStats || !cmpBox) return;
    cmpBox.innerHTML = '<h3>Ranges compared</h3><p class="note" id="drill-compare-ranges">A: ' + rangeText(rangeA) +
      '; B: ' + rangeText(rangeB) + '. Per row: time by state (ns, % of the range), VM exits by reason ' +
      'and their durations, as <code>vcpus</code>, <code>threads</code>, <code>pcpus</code> and ' +
      '<code>exits --from --to</code> count them.</p>' + statsHtml(cmpStats, ['A', 'B'], shownIds());
  }
  function setRange(a, b) {
    range = { a: a, b: b };
    rangeStats = null;
    draw();
    const r = range;
    api('/api/stats', { from: a, to: b }).then((st) => {
      if (r !== range) return;
      rangeStats = st;
      showStats();
    }).catch((e) => { status.textContent = 'the server refused: ' + e.message; });
  }
  /* a range selected on the summary timeline above (timeline.js) is this range too */
  document.addEventListener('vms-select', (ev) => {
    if (!ev.detail) { if (range) { range = null; rangeStats = null; showStats(); draw(); } return; }
    if (ev.detail.b > ev.detail.a) setRange(ev.detail.a, ev.detail.b);
  });
  /* the selection's statistics, and the page's histograms following it */
  const exitsSection = document.getElementById('exits');
  const exitsWhole = exitsSection ? exitsSection.innerHTML : '';
  const stealSection = document.getElementById('steal');
  const stealWhole = stealSection ? stealSection.innerHTML : '';
  /* who took each vCPU's CPU in the selection (report --from --to's steal), as the section
   * draws the whole trace: per vCPU the host threads, their time and share of the range */
  function showSteal() {
    if (!stealSection) return;
    if (!range || !rangeStats) {
      if (stealSection.dataset.range) { stealSection.innerHTML = stealWhole; delete stealSection.dataset.range; }
      return;
    }
    if (!rangeStats.rows.some((r) => 'steal' in r)) {
      /* the static page's statistics come from the intervals it holds, which do not say who
       * ran instead: the section stays the whole trace's, and says so */
      stealSection.innerHTML = '<p class="note" id="steal-range">The selection ' + rangeText(range) +
        ': who took the CPU in it is known to <code>vmscope serve</code> (and <code>vmscope report ' +
        '--from --to</code>); below, the whole trace.</p>' + stealWhole;
      stealSection.dataset.range = range.a + ',' + range.b;
      return;
    }
    const info = rowById(), span = rangeStats.to - rangeStats.from;
    let html = '<h2>Who took the CPU</h2><p class="note" id="steal-range">The selection ' + rangeText(range) +
      ', from the server: per vCPU, the host threads that ran on the physical CPU its thread had left while ' +
      'it was runnable, and their share of the selection (<kbd>Escape</kbd> in the drill-down shows the ' +
      'whole trace again).</p>';
    let n = 0;
    const unseen = rangeStats.rows.filter((r) => r.kind === 'vcpu' && r.steal === null);
    if (unseen.length)
      html += '<p class="unknown" id="steal-unknown">Unknown for ' + unseen.map((r) => esc(info[r.id] ? info[r.id].label : r.id)).join(', ') +
        ': the host recorded no sched_switch, so when the vCPU thread was off its CPU, and who ran there, cannot be seen.</p>';
    for (const r of rangeStats.rows) {
      if (r.kind !== 'vcpu' || !r.steal || !r.steal.length) continue;
      const pre = r.state_ns[r.categories.indexOf('preempted')] || 0;
      html += '<table class="steal" data-row="' + esc(r.id) + '"><caption>' + esc(info[r.id] ? info[r.id].label : r.id) +
        ': preempted ' + fmtD(pre) + '</caption><tr><th>host thread</th><th>pid</th><th>tid</th><th>time</th>' +
        '<th>share</th></tr>';
      for (const e of r.steal) {
        const who = esc(e.comm || '?') + (e.layer ? ' <span class="layer">(' + esc(e.layer) + ')</span>' : '');
        const ids = e.kind === 'unattributed' ? '<td colspan="2">too many vCPUs waited on the CPU: who ran is not followed</td>'
          : e.kind === 'other threads' ? '<td colspan="2">' + (e.threads_at_least ? 'at least ' : '') + e.threads +
            ' distinct threads beyond the first ones</td>'
          : '<td>' + (e.pid === null ? 'not recorded' : e.pid) + '</td><td>' + e.tid + '</td>';
        html += '<tr data-tid="' + (e.tid === null ? '' : e.tid) + '" data-ns="' + e.ns + '"><td>' + who + '</td>' + ids +
          '<td>' + fmtD(e.ns) + '</td><td>' + pct(e.ns, span) + '</td></tr>';
      }
      html += '</table>';
      n++;
    }
    if (!n && rangeStats.rows.some((r) => r.kind === 'vcpu' && r.steal)) html += '<p>No vCPU was preempted in the selection.</p>';
    stealSection.innerHTML = html;
    stealSection.dataset.range = range.a + ',' + range.b;
  }
  function showStats() {
    renderCompare();
    showSteal();
    if (!selBox) return;
    if (!range || !rangeStats) {
      selBox.innerHTML = '';
      if (exitsSection && exitsSection.dataset.range) { exitsSection.innerHTML = exitsWhole; delete exitsSection.dataset.range; }
      return;
    }
    selBox.innerHTML = '<h3 id="drill-selstats-range">Selection ' + rangeText(range) + '</h3>' +
      '<p class="note"><kbd>Shift</kbd>+<kbd>A</kbd> / <kbd>Shift</kbd>+<kbd>B</kbd> store it for the ' +
      'comparison; <kbd>Escape</kbd> drops it. The exit latency histograms below show it too.</p>' +
      statsHtml([rangeStats], ['selection'], shownIds());
    if (exitsSection) {
      /* per guest and reason, the vCPUs' histograms added, as the section draws the trace */
      const info = rowById(), per = {};
      for (const r of rangeStats.rows) {
        if (r.kind !== 'vcpu' || !info[r.id]) continue;
        const m = info[r.id].machine;
        for (const x of r.exits) {
          const k = m + '\u0000' + x.name;
          const e = per[k] || (per[k] = { machine: m, name: x.name, count: 0, ended: 0, bins: {} });
          e.count += x.count;
          e.ended += x.ended;
          for (const [b, c] of x.bins) e.bins[b] = (e.bins[b] || 0) + c;
        }
      }
      const list = Object.values(per).sort((p, q) => (p.machine < q.machine ? -1 : p.machine > q.machine ? 1 : q.count - p.count));
      let html = '<h2>VM exit latency per reason</h2><p class="note" id="exits-range">The selection ' +
        rangeText(range) + ', from the server (<kbd>Escape</kbd> in the drill-down shows the whole trace ' +
        'again). Time from each <code>kvm_exit</code> to its <code>kvm_entry</code>, bins of a quarter ' +
        'power of two.</p>';
      let lastM = null;
      for (const e of list) {
        if (e.machine !== lastM) { html += (lastM !== null ? '</div>' : '') + '<h3>' + esc(e.machine) + '</h3><div class="hists">'; lastM = e.machine; }
        const bins = Object.keys(e.bins).map(Number).sort((p, q) => p - q).map((b) => [b, e.bins[b]]);
        const [lo, hi] = binRange([bins]);
        html += histSvg(bins, lo, hi, '<b>' + esc(e.name) + '</b> &middot; ' + e.count + ' exits').replace('<figure class="hist">',
          '<figure class="hist" data-machine="' + esc(e.machine) + '" data-reason="' + esc(e.name) + '" data-count="' + e.count + '">');
      }
      if (lastM !== null) html += '</div>';
      else html += '<p>No VM exit in the selection.</p>';
      exitsSection.innerHTML = html;
      exitsSection.dataset.range = range.a + ',' + range.b;
    }
  }

  /* the findings of `report`, each a link: zoom to its interval (the whole trace when it has
   * none) and select the row it names */
  function showFindings(list) {
    const box = document.getElementById('drill-findings');
    if (!box) return;
    if (!list) { box.innerHTML = ''; list = []; return; }   /* the static page: in its summary */
    box.innerHTML = list.length ? '<h3>Findings</h3><ol>' + list.map((f, k) =>
      '<li><a href="#" class="finding" data-k="' + k + '">' + esc(f.kind) + '</a>: ' + esc(f.text) +
      '</li>').join('') + '</ol>' : '<p class="note">No findings.</p>';
    box.addEventListener('click', (ev) => {
      const k = ev.target.dataset && ev.target.dataset.k;
      if (k === undefined) return;
      ev.preventDefault();
      const f = list[Number(k)];
      const idx = rows.findIndex((r) => r.machine === f.machine &&
        ((f.vcpu !== null && r.kind === 'vcpu' && r.vcpu === f.vcpu) ||
         (f.vcpu === null && f.tid !== null && r.kind === 'thread' && r.tid === f.tid)));
      if (idx >= 0) selRow = idx;
      if (f.start_ns !== null && f.end_ns !== null) setView(f.start_ns, f.end_ns, true);
      else setView(first, last + 1, true);
      root.focus();
    });
  }

  api('/api/rows', {}).then((j) => {
    rows = j.rows.filter((r) => r.kind !== 'thread' || j.rows.length < 200);
    first = j.first; last = j.last;
    v0 = first; v1 = last + 1;
    readHash();
    setView(v0, v1, false);
    return api('/api/findings', {}).then((fj) => { showFindings(fj.findings); root.dataset.ready = '1'; });
  }).catch((e) => { status.textContent = 'the server refused: ' + e.message; });
  compare();
  window.vmsDrill = { setView: (a, b) => setView(a, b, true), view: () => [v0, v1],
    data: () => data, rows: () => rows, matches: () => matches, selected: () => selRow,
    cursor: () => cursor, range: () => range, ranges: () => [rangeA, rangeB],
    rangeStats: () => rangeStats, compared: () => cmpStats,
    pick: (ids) => { picked = ids.map((id) => rows.findIndex((r) => r.id === id)).filter((i) => i >= 0); showStats(); } };
})();
