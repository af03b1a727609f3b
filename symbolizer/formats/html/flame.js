/* ember flame graph viewer. Self-contained: no libraries, no network.
 *
 * Data (#ember-data, written by symbolizer/out_html.c):
 *   strings  the string table
 *   funcs    [name, file, line, kind] per function, flattened
 *   nodes    [func, depth, total] per frame, flattened, in preorder with
 *            children ordered by name; a diff adds the base total, a profile
 *            with off-CPU time gives [func, depth, CPU samples, off-CPU ns]
 *   kinds    kind names indexed by the kind numbers in funcs
 *   unit     "samples" or "ns" (the values of a diff); off_cpu: the page
 *            switches between CPU, off-CPU and both (time on and off CPU)
 * Each node's parent and subtree end are derived here in one pass, and its x
 * offset and self value once per view, into typed arrays, so a profile of
 * 100,000 stacks stays cheap. */
(function () {
  'use strict';

  const t0 = performance.now();
  const data = JSON.parse(document.getElementById('ember-data').textContent);
  const S = data.strings;
  const KINDS = data.kinds;
  const isDiff = !!data.diff;
  const hasOff = !!data.off_cpu && !isDiff;
  const stride = isDiff || hasOff ? 4 : 3;
  const N = Math.floor(data.nodes.length / stride);
  const NF = Math.floor(data.funcs.length / 4);

  /* ---- the tree ------------------------------------------------------------ */
  const fnName = new Uint32Array(NF), fnFile = new Uint32Array(NF);
  const fnLine = new Uint32Array(NF), fnKind = new Uint8Array(NF);
  for (let f = 0; f < NF; f++) {
    fnName[f] = data.funcs[4 * f];
    fnFile[f] = data.funcs[4 * f + 1];
    fnLine[f] = data.funcs[4 * f + 2];
    fnKind[f] = data.funcs[4 * f + 3];
  }
  const func = new Uint32Array(N), depth = new Uint32Array(N);
  const colA = new Float64Array(N), colB = new Float64Array(N); /* the node's two values */
  const total = new Float64Array(N), self = new Float64Array(N), base = new Float64Array(N);
  const baseSelf = new Float64Array(N), x = new Float64Array(N);
  const parent = new Int32Array(N), end = new Uint32Array(N);
  let maxDepth = 0;
  {
    const open = [];  /* the path to the current node */
    for (let i = 0; i < N; i++) {
      const o = i * stride;
      const d = Math.min(data.nodes[o + 1], open.length);
      func[i] = data.nodes[o] < NF ? data.nodes[o] : 0;
      depth[i] = d;
      colA[i] = data.nodes[o + 2];
      if (stride === 4) colB[i] = data.nodes[o + 3];
      while (open.length > d) end[open.pop()] = i;
      parent[i] = d > 0 ? open[d - 1] : -1;
      open.push(i);
      if (d > maxDepth) maxDepth = d;
    }
    while (open.length) end[open.pop()] = N;
  }
  /* The value of a node in a view: CPU samples, off-CPU nanoseconds, or both as time. */
  const period = data.period_ns || 0;
  function valueOf(i, metric) {
    if (!hasOff || metric === 'cpu') return colA[i];
    return metric === 'off-cpu' ? colB[i] : colA[i] * period + colB[i];
  }
  /* Totals, selves and x offsets for a view: a node's frame starts where its previous
   * sibling's ends, the first child where its parent starts. */
  function layoutValues(metric) {
    const cursor = [0]; /* next free x per depth */
    for (let i = 0; i < N; i++) {
      total[i] = self[i] = valueOf(i, metric);
      if (isDiff) base[i] = baseSelf[i] = colB[i];
      const d = depth[i];
      if (d > 0) {
        self[parent[i]] -= total[i];
        baseSelf[parent[i]] -= base[i];
      }
      x[i] = cursor[d] || 0;
      cursor[d] = x[i] + total[i];
      cursor[d + 1] = x[i];
    }
  }
  let metric = hasOff && ['cpu', 'off-cpu', 'both'].includes(data.view) ? data.view : 'cpu';
  layoutValues(metric);
  let allSamples = N ? total[0] : 0;
  const baseSamples = isDiff ? data.diff.base_samples : 0;

  /* ---- formatting ------------------------------------------------------------ */
  const nf = new Intl.NumberFormat('en-US');
  const num = (v) => nf.format(Math.round(v));
  /* Values are nanoseconds in the off-CPU and both views (and diffs of them). */
  const inNs = () => (hasOff ? metric !== 'cpu' : data.unit === 'ns');
  function fmtNs(ns) {
    const s = ns / 1e9;
    if (s >= 1) return fmtDuration(s);
    if (s >= 1e-3) return (s * 1e3).toFixed(s >= 1e-2 ? 1 : 2) + ' ms';
    return (s * 1e6).toFixed(0) + ' \u00b5s';
  }
  const fmtV = (v) => (inNs() ? fmtNs(v) : num(v) + ' samples');
  /* What the shares are of: "all samples", "all off-CPU time", ... */
  const ofAll = () => 'of all ' + (!inNs() ? 'samples' : hasOff && metric === 'both' ?
    'time on and off CPU' : hasOff || data.view === 'off-cpu' ? 'off-CPU time' : 'time');
  const pct = (v, of) => (of > 0 ? (100 * v / of).toFixed(v && v < of / 1000 ? 3 : 2) : '0.00') + '%';
  const pp = (d) => (d >= 0 ? '+' : '\u2212') + Math.abs(100 * d).toFixed(2) + ' pp';
  const name = (i) => S[fnName[func[i]]];
  const kindName = (k) => KINDS[k] || 'unknown';

  function fmtTime(ms) {
    const d = new Date(ms);
    const p2 = (v) => String(v).padStart(2, '0');
    return d.getUTCFullYear() + '-' + p2(d.getUTCMonth() + 1) + '-' + p2(d.getUTCDate()) + ' ' +
      p2(d.getUTCHours()) + ':' + p2(d.getUTCMinutes()) + ':' + p2(d.getUTCSeconds()) + ' UTC';
  }
  function fmtDuration(s) {
    if (s >= 3600) return (s / 3600).toFixed(1) + ' h';
    if (s >= 60) return (s / 60).toFixed(1) + ' min';
    return (s >= 10 ? s.toFixed(0) : s.toFixed(1)) + ' s';
  }

  /* ---- colours ---------------------------------------------------------------- */
  /* Hue ranges per kind; each name picks a stable spot in its range. */
  const PALETTE = {
    kernel: [222, 242, 60, 70], /* blue: stands apart from the user-space flame */
    native: [0, 48, 78, 60],   /* red to yellow, the classic flame */
    go: [178, 200, 55, 58],    /* aqua */
    cpython: [92, 130, 45, 55], /* green: interpreted */
    ruby: [330, 352, 55, 62],   /* ruby red to pink: interpreted */
    php: [250, 268, 40, 66],    /* PHP's indigo to violet: interpreted */
    perl: [196, 214, 50, 60],   /* Perl's camel blue: interpreted */
    jvm: [24, 38, 60, 40],      /* Java's coffee brown: darker than the native flame */
    v8js: [140, 160, 45, 40],   /* Node's dark green: JavaScript */
    unknown: [8, 56, 62, 64],  /* paler flame: kind not recorded (e.g. folded input) */
    process: [262, 276, 30, 76],
    all: [0, 0, 0, 76],
  };
  function hash(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return (h >>> 0) / 4294967296;
  }
  const fnColor = new Array(NF);
  function kindColor(f) {
    if (fnColor[f]) return fnColor[f];
    const p = PALETTE[kindName(fnKind[f])] || PALETTE.unknown;
    const v = hash(S[fnName[f]]);
    const hue = p[0] + (p[1] - p[0]) * v;
    const light = p[3] + 8 * (hash(S[fnName[f]] + '#') - 0.5);
    return (fnColor[f] = 'hsl(' + hue.toFixed(1) + ',' + p[2] + '%,' + light.toFixed(1) + '%)');
  }
  /* A diff colours each frame by how its share of all samples changed. */
  function shareDelta(i) {
    return (allSamples ? total[i] / allSamples : 0) - (baseSamples ? base[i] / baseSamples : 0);
  }
  let maxDelta = 0;
  if (isDiff) for (let i = 0; i < N; i++) maxDelta = Math.max(maxDelta, Math.abs(shareDelta(i)));
  function diffColor(i) {
    const d = shareDelta(i);
    const t = maxDelta > 0 ? Math.sqrt(Math.min(1, Math.abs(d) / maxDelta)) : 0;
    if (t < 0.02) return 'rgb(235,235,235)';
    const fade = (a) => Math.round(235 + (a - 235) * t);
    return d > 0 ? 'rgb(' + fade(230) + ',' + fade(40) + ',' + fade(30) + ')'
      : 'rgb(' + fade(40) + ',' + fade(90) + ',' + fade(230) + ')';
  }
  const MATCH_COLOR = 'rgb(224,64,251)';

  /* ---- page state --------------------------------------------------------------- */
  const canvas = document.getElementById('flame');
  const chart = document.getElementById('chart');
  const spacer = document.getElementById('spacer');
  const tooltip = document.getElementById('tooltip');
  const searchBox = document.getElementById('search');
  const ctx = canvas.getContext('2d');
  const ROW = 18, FONT = '12px ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace';
  const MIN_WIDTH = 0.4; /* frames narrower than this many pixels are not drawn */
  const state = { zoom: 0, view: 'flame', matchFn: null, matched: 0, width: 0, height: 0,
    scroll: 0, charWidth: 7 };
  let drawnAt = []; /* per depth: node indices drawn, in increasing x */
  let labels = [];  /* texts drawn, for tests and accessibility */

  /* A row's top in canvas coordinates (the canvas shows the chart's scrolled window). */
  function rowY(d) {
    return (state.view === 'flame' ? (maxDepth - d) * ROW : d * ROW) - state.scroll;
  }

  function layout() {
    const dpr = window.devicePixelRatio || 1;
    const full = (maxDepth + 1) * ROW;
    const room = Math.max(200, window.innerHeight - chart.getBoundingClientRect().top - 12);
    state.width = Math.max(200, chart.clientWidth);
    state.height = Math.min(full, room);
    chart.style.height = state.height + 'px';
    spacer.style.height = full + 'px';
    canvas.style.height = state.height + 'px';
    canvas.width = Math.round(state.width * dpr);
    canvas.height = Math.round(state.height * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.font = FONT;
    state.charWidth = ctx.measureText('mmmmmmmmmm').width / 10 || 7;
  }

  function drawFrame(i, px, w, faded) {
    const y = rowY(depth[i]);
    if (y <= -ROW || y >= state.height) return;
    const matched = state.matchFn && state.matchFn[func[i]];
    ctx.globalAlpha = faded ? 0.55 : 1;
    ctx.fillStyle = matched ? MATCH_COLOR : (isDiff ? diffColor(i) : kindColor(func[i]));
    ctx.fillRect(px, y, w > 2 ? w - 1 : w, ROW - 1);
    (drawnAt[depth[i]] || (drawnAt[depth[i]] = [])).push(i);
    if (w < 3 * state.charWidth + 6) return;
    const full = name(i);
    const fit = Math.floor((w - 6) / state.charWidth);
    const text = full.length <= fit ? full : full.slice(0, Math.max(1, fit - 1)) + '\u2026';
    ctx.fillStyle = '#000';
    ctx.fillText(text, px + 3, y + ROW - 5);
    labels.push(text);
  }

  function draw() {
    const W = state.width, z = state.zoom;
    const x0 = x[z], scale = total[z] > 0 ? W / total[z] : 0;
    state.scroll = chart.scrollTop;
    ctx.clearRect(0, 0, W, state.height);
    ctx.font = FONT;
    drawnAt = [];
    labels = [];
    const ancestors = [];
    for (let a = parent[z]; a >= 0; a = parent[a]) ancestors.push(a);
    for (const a of ancestors.reverse()) drawFrame(a, 0, W, true);
    for (let i = z; i < end[z];) {
      const w = total[i] * scale;
      if (w < MIN_WIDTH) { i = end[i]; continue; }
      drawFrame(i, (x[i] - x0) * scale, w, false);
      i++;
    }
    ctx.globalAlpha = 1;
  }

  /* The frame under a point of the canvas, or -1. */
  function hit(cx, cy) {
    const row0 = Math.floor((cy + state.scroll) / ROW);
    const d = state.view === 'flame' ? maxDepth - row0 : row0;
    const row = drawnAt[d];
    if (!row) return -1;
    const z = state.zoom, scale = total[z] > 0 ? state.width / total[z] : 0;
    const left = (i) => (depth[i] < depth[z] ? 0 : (x[i] - x[z]) * scale);
    const width = (i) => (depth[i] < depth[z] ? state.width : total[i] * scale);
    let lo = 0, hi = row.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1, i = row[mid];
      if (cx < left(i)) hi = mid - 1;
      else if (cx >= left(i) + width(i)) lo = mid + 1;
      else return i;
    }
    return -1;
  }

  /* ---- zoom ------------------------------------------------------------------------ */
  function zoomTo(i) {
    if (!(i >= 0 && i < N)) return;
    tooltip.hidden = true;
    state.zoom = i;
    document.getElementById('reset').disabled = i === 0;
    const path = [];
    for (let a = i; a >= 0; a = parent[a]) path.push(name(a));
    document.getElementById('zoominfo').textContent = i === 0 ? '' :
      'Zoomed: ' + path.reverse().join(' \u203a ') + ' \u2014 ' + pct(total[i], allSamples) +
      ' ' + ofAll() + '. Click a faded frame or press Esc to zoom out.';
    draw();
    updateMatch();
  }

  /* ---- search ------------------------------------------------------------------------ */
  function compile(q) {
    try {
      searchBox.classList.remove('bad');
      return new RegExp(q, 'i');
    } catch (e) {
      searchBox.classList.add('bad');
      return new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
    }
  }
  function search(q) {
    if (!q) {
      state.matchFn = null;
    } else {
      const re = compile(q);
      state.matchFn = new Uint8Array(NF);
      for (let f = 0; f < NF; f++)
        if (fnKind[f] < KINDS.indexOf('process') && re.test(S[fnName[f]])) state.matchFn[f] = 1;
    }
    draw();
    return updateMatch();
  }
  /* The samples under matching frames, each counted once (nested matches are skipped). */
  function matchedSamples(from, to) {
    let sum = 0;
    for (let i = from; i < to;) {
      if (state.matchFn[func[i]]) { sum += total[i]; i = end[i]; } else i++;
    }
    return sum;
  }
  function updateMatch() {
    const el = document.getElementById('match');
    if (!state.matchFn) { el.textContent = ''; state.matched = 0; return 0; }
    const sum = matchedSamples(0, N);
    state.matched = sum;
    let text = 'Matched: ' + pct(sum, allSamples) + ' (' + fmtV(sum) + ' ' + ofAll().replace(/^of all /, 'of ') + ')';
    if (state.zoom !== 0) text += ', ' + pct(matchedSamples(state.zoom, end[state.zoom]), total[state.zoom]) + ' of zoomed frame';
    el.textContent = text;
    return sum;
  }

  /* ---- tooltip ------------------------------------------------------------------------- */
  function row(table, label, value, extra) {
    const tr = table.insertRow();
    tr.insertCell().textContent = label;
    const v = tr.insertCell();
    v.className = 'n';
    v.textContent = value;
    tr.insertCell().textContent = extra || '';
  }
  function showTooltip(i, ev) {
    const f = func[i];
    tooltip.textContent = '';
    const n = document.createElement('div');
    n.className = 'name';
    n.textContent = name(i);
    tooltip.appendChild(n);
    const where = document.createElement('div');
    where.className = 'where';
    const file = S[fnFile[f]];
    where.textContent = kindName(fnKind[f]) + (file ? ' \u00b7 ' + file + (fnLine[f] ? ':' + fnLine[f] : '') : '');
    tooltip.appendChild(where);
    const t = document.createElement('table');
    row(t, 'total', fmtV(total[i]), pct(total[i], allSamples) + ' of all' +
      (state.zoom !== 0 && depth[i] >= depth[state.zoom] ? ', ' + pct(total[i], total[state.zoom]) + ' of zoomed' : ''));
    row(t, 'self', fmtV(self[i]), pct(self[i], allSamples) + ' of all');
    if (hasOff && metric === 'both')
      row(t, 'off CPU', fmtNs(colB[i]), pct(colB[i], total[i]) + ' of its total');
    if (isDiff) {
      row(t, 'base', fmtV(base[i]), pct(base[i], baseSamples) + ' of base');
      row(t, 'change', pp(shareDelta(i)), ofAll() + ' (self ' +
        pp((allSamples ? self[i] / allSamples : 0) - (baseSamples ? baseSelf[i] / baseSamples : 0)) + ')');
    }
    tooltip.appendChild(t);
    tooltip.hidden = false;
    const pad = 14, r = tooltip.getBoundingClientRect();
    let left = ev.clientX + pad, top = ev.clientY + pad;
    if (left + r.width > window.innerWidth) left = Math.max(0, ev.clientX - r.width - pad);
    if (top + r.height > window.innerHeight) top = Math.max(0, ev.clientY - r.height - pad);
    tooltip.style.left = left + 'px';
    tooltip.style.top = top + 'px';
  }

  /* ---- header, legend, table ------------------------------------------------------------- */
  function header() {
    const kind = isDiff ? 'ember differential flame graph' : 'ember flame graph';
    /* A recording of a chosen command, unit, container, ... is named after it. */
    const what = data.title ? data.title + ' \u2014 ' + kind : kind;
    document.getElementById('title').textContent = what + (data.host ? ': ' + data.host : '');
    document.title = data.host ? data.host + ' \u2014 ' + what : what;
    if (data.selection) document.getElementById('title').title = 'recorded: ' + data.selection;
    const sub = document.getElementById('subtitle');
    const parts = [];
    if (data.start_ms) {
      let t = fmtTime(data.start_ms);
      if (data.end_ms > data.start_ms) t += ' \u2192 ' + fmtTime(data.end_ms) + ' (' + fmtDuration((data.end_ms - data.start_ms) / 1000) + ')';
      parts.push(t);
    }
    if (data.hz) parts.push(data.hz + ' Hz');
    if (isDiff) parts.push('base ' + fmtV(baseSamples) + ', new ' + fmtV(allSamples));
    else if (hasOff) parts.push(num(data.cpu_samples) + ' samples', fmtNs(data.cpu_samples * period) + ' of CPU',
      fmtNs(data.off_cpu_ns) + ' off CPU');
    else parts.push(num(allSamples) + ' samples');
    if (!hasOff && !inNs() && data.period_ns && allSamples) parts.push(fmtDuration(allSamples * data.period_ns / 1e9) + ' of CPU');
    sub.textContent = parts.join(' \u00b7 ') + ' \u00b7 ';
    const lost = document.createElement('span');
    const cpuSamples = hasOff ? data.cpu_samples : allSamples;
    lost.textContent = num(data.lost) + ' lost' + (data.lost ? ' (' + pct(data.lost, data.lost + cpuSamples) + ')' : '');
    if (data.lost) lost.className = 'lost';
    sub.appendChild(lost);
  }
  function legend() {
    const el = document.getElementById('legend');
    if (isDiff) {
      el.append('shrank');
      const g = document.createElement('span');
      g.className = 'grad';
      el.append(g, 'grew (share of samples)');
      return;
    }
    const seen = new Set();
    for (let f = 0; f < NF; f++) seen.add(fnKind[f]);
    for (const k of seen) {
      const kn = kindName(k);
      if (kn === 'all' || kn === 'process') continue;
      const item = document.createElement('span');
      const sw = document.createElement('span');
      sw.className = 'sw';
      const p = PALETTE[kn] || PALETTE.unknown;
      sw.style.background = 'hsl(' + (p[0] + p[1]) / 2 + ',' + p[2] + '%,' + p[3] + '%)';
      item.append(sw, kn === 'cpython' ? 'python' : kn);
      el.appendChild(item);
    }
  }
  function changesTable() {
    if (!isDiff) return;
    document.getElementById('changes').hidden = false;
    const body = document.querySelector('#changes-table tbody');
    const share = (v, of) => (of > 0 ? v / of : 0);
    for (const c of data.diff.changes) {
      const tr = body.insertRow();
      const fname = S[c[0]];
      const ds = share(c[3], allSamples) - share(c[2], baseSamples);
      const dt = share(c[5], allSamples) - share(c[4], baseSamples);
      const cells = [fname, pct(c[2], baseSamples), pct(c[3], allSamples), pp(ds),
        pct(c[4], baseSamples), pct(c[5], allSamples), pp(dt)];
      cells.forEach((v, k) => {
        const td = tr.insertCell();
        td.textContent = v;
        if (k === 0) td.title = fname;
        if (k === 3 || k === 6) {
          const d = k === 3 ? ds : dt;
          if (Math.abs(d) >= 0.00005) td.className = d > 0 ? 'up' : 'down';
        }
      });
      tr.addEventListener('click', () => {
        searchBox.value = '^' + fname.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$';
        search(searchBox.value);
        window.scrollTo(0, 0);
      });
    }
  }

  /* ---- events ------------------------------------------------------------------------------- */
  function point(ev) {
    const r = canvas.getBoundingClientRect();
    return [ev.clientX - r.left, ev.clientY - r.top];
  }
  canvas.addEventListener('mousemove', (ev) => {
    const i = hit(...point(ev));
    if (i < 0) { tooltip.hidden = true; return; }
    showTooltip(i, ev);
  });
  canvas.addEventListener('mouseleave', () => { tooltip.hidden = true; });
  canvas.addEventListener('click', (ev) => {
    const i = hit(...point(ev));
    if (i >= 0 && i !== state.zoom) zoomTo(i);
  });
  document.getElementById('reset').addEventListener('click', () => zoomTo(0));
  function setView(v) {
    state.view = v;
    tooltip.hidden = true;
    document.getElementById('view-flame').setAttribute('aria-pressed', String(v === 'flame'));
    document.getElementById('view-icicle').setAttribute('aria-pressed', String(v === 'icicle'));
    chart.scrollTop = v === 'flame' ? chart.scrollHeight : 0;
    draw();
  }
  document.getElementById('view-flame').addEventListener('click', () => setView('flame'));
  document.getElementById('view-icicle').addEventListener('click', () => setView('icicle'));
  /* CPU samples, time off CPU, or both: the same frames, other widths. */
  const METRICS = { cpu: 'metric-cpu', 'off-cpu': 'metric-off', both: 'metric-both' };
  function setMetric(m) {
    if (!hasOff || !METRICS[m]) return;
    metric = m;
    layoutValues(m);
    allSamples = N ? total[0] : 0;
    for (const k in METRICS) document.getElementById(METRICS[k]).setAttribute('aria-pressed', String(k === m));
    zoomTo(0);
  }
  if (hasOff) {
    document.getElementById('metrics').hidden = false;
    for (const k in METRICS) document.getElementById(METRICS[k]).addEventListener('click', () => setMetric(k));
    for (const k in METRICS) document.getElementById(METRICS[k]).setAttribute('aria-pressed', String(k === metric));
  }
  let searchTimer = 0;
  searchBox.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => search(searchBox.value), 120);
  });
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') {
      if (document.activeElement === searchBox && searchBox.value) {
        searchBox.value = '';
        search('');
      } else if (state.zoom !== 0) {
        zoomTo(parent[state.zoom]);
      }
    } else if (ev.key === '/' && document.activeElement !== searchBox) {
      ev.preventDefault();
      searchBox.focus();
    }
  });
  let scrollPending = false;
  chart.addEventListener('scroll', () => {
    tooltip.hidden = true;
    if (scrollPending) return;
    scrollPending = true;
    requestAnimationFrame(() => { scrollPending = false; draw(); });
  });
  let resizeTimer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { layout(); draw(); }, 100);
  });

  /* ---- start --------------------------------------------------------------------------------- */
  header();
  legend();
  changesTable();
  layout();
  chart.scrollTop = chart.scrollHeight;
  draw();

  /* What tests and scripts can ask the page (the canvas has no DOM per frame). */
  window.emberFlame = {
    ready: true,
    nodes: N,
    renderMs: performance.now() - t0,
    loadedMs: performance.now(),
    state: () => ({ zoom: state.zoom, zoomName: name(state.zoom), view: state.view, metric: metric,
      matched: state.matched, matchedShare: allSamples ? state.matched / allSamples : 0 }),
    find: (fname) => { for (let i = 0; i < N; i++) if (name(i) === fname) return i; return -1; },
    name: (i) => name(i),
    total: (i) => total[i],
    self: (i) => self[i],
    /* The frame's rectangle in viewport coordinates, or null when it is not drawn. */
    rectOf: (i) => {
      const row = drawnAt[depth[i]];
      if (!row || row.indexOf(i) < 0) return null;
      const z = state.zoom, scale = state.width / total[z], r = canvas.getBoundingClientRect();
      const left = depth[i] < depth[z] ? 0 : (x[i] - x[z]) * scale;
      const w = depth[i] < depth[z] ? state.width : total[i] * scale;
      return { x: r.left + left, y: r.top + rowY(depth[i]), w: w, h: ROW - 1 };
    },
    zoomTo: zoomTo,
    search: (q) => { searchBox.value = q; return search(q); },
    setView: setView,
    /* 'cpu', 'off-cpu' or 'both' on a page with off-CPU time. */
    setMetric: setMetric,
    allTotal: () => allSamples,
    visibleLabels: () => labels.slice(),
  };
})();
