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
    thread: { vmm: '#d7191c', preempted: '#8e2ab8', halted: '#f0a818' },
  };
  const VCPU_CATS = ['unknown', 'idle', 'running', 'vmm', 'preempted', 'halted'];
  const THREAD_CATS = ['', 'vmm', 'preempted', 'halted', '', ''];
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
  let matches = [], matchIdx = -1;

  function api(path, params) {
    const q = new URLSearchParams(params);
    q.set('token', token);
    return fetch(path + '?' + q.toString()).then((r) => r.json().then((j) => {
      if (!r.ok) throw new Error(j.error || r.status);
      return j;
    }));
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
      status.textContent = 'asking the server for [' + a + ', ' + b + ') ns...';
      api('/api/window', { from: a, to: b, px: Math.min(4096, W()) }).then((j) => {
        if (my !== seq) return;
        data = j;
        data.byId = {};
        for (const r of j.rows) data.byId[r.id] = r;
        status.textContent = 'window [' + j.from + ', ' + j.to + ') ns, ' + j.pixel_ns + ' ns per pixel';
        draw();
        fetchEvents(a, b, my);
      }).catch((e) => { if (my === seq) status.textContent = 'the server refused: ' + e.message; });
    }, 60);
  }
  function fetchEvents(a, b, my) {
    api('/api/events', { from: a, to: b, limit: 200 }).then((j) => {
      if (my !== seq) return;
      evlist.innerHTML = j.lines.map((l) => '<div class="ev">' + esc(l) + '</div>').join('') +
        (j.lines.length >= 200 ? '<div class="note">the first 200 events of the window</div>' : '');
    }).catch(() => {});
  }

  function colorOf(kind, iv) {
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
  canvas.addEventListener('click', (ev) => {
    root.focus();
    const h = hit(ev);
    if (!h) return;
    cursor = h.t;
    if (h.row !== undefined) {
      selRow = h.row;
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
    status.textContent = 'match ' + (matchIdx + 1) + ' of ' + matches.length + ': ' + m.what + ' at ' + fmtT(m.t);
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
    } else if (ev.key === 'm' && cursor !== null) { markers.push(cursor); saveHash(); draw(); }
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

  /* the findings of `report`, each a link: zoom to its interval (the whole trace when it has
   * none) and select the row it names */
  function showFindings(list) {
    const box = document.getElementById('drill-findings');
    if (!box) return;
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
  window.vmsDrill = { setView: (a, b) => setView(a, b, true), view: () => [v0, v1],
    data: () => data, rows: () => rows, matches: () => matches, selected: () => selRow };
})();
