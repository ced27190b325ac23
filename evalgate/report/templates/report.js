"use strict";
// The evalgate HTML report. Every text of the data is untrusted (outputs, ids, reasons): it reaches the page
// through textContent and text nodes only, never as markup, a URL or an event handler.
(function () {
  performance.mark("evalgate-start");
  const D = JSON.parse(document.getElementById("evalgate-data").textContent);
  performance.mark("evalgate-parsed");
  const SVGNS = "http://www.w3.org/2000/svg";
  const FAILING = 1, ERRORED = 2, FLAKY = 4, REGRESSED = 8, IMPROVED = 16;
  const PAGE = 50;
  const $ = (id) => document.getElementById(id);

  function el(tag, cls, ...kids) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);  // a string becomes a text node
    return e;
  }
  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fmt(x, d) { return x === null || x === undefined ? "–" : x.toFixed(d === undefined ? 3 : d); }
  function signed(x, d) {
    if (x === null || x === undefined) return "–";
    const t = x.toFixed(d === undefined ? 2 : d);
    return Number(t) === 0 ? t.replace("-", "") : (x > 0 ? "+" + t : t.replace("-", "−"));
  }
  function interval(lo, hi, d) { return lo === null || hi === null ? "" : "[" + signedOr(lo, d) + ", " + signedOr(hi, d) + "]"; }
  function signedOr(x, d) { return d === "s" ? signed(x) : fmt(x, 3); }
  function short(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  function th(...names) { const r = el("tr"); for (const n of names) r.append(el("th", null, n)); return r; }
  function td(text, cls) { return el("td", cls, text); }
  function better(e) {  // which way the change went, by the entry's direction of better
    const c = e.cmp;
    if (!c || c.lo === null || c.hi === null) return "";
    const lo = e.hib ? c.lo : -c.hi, hi = e.hib ? c.hi : -c.lo;
    return lo > 0 ? "▲ better" : hi < 0 ? "▼ worse" : "≈ no clear change";
  }
  const STATUS_WORDS = {regressed: "regressed", improved: "improved", uncertain: "uncertain",
    unchanged: "unchanged", incomparable: "not compared"};

  // ---- the verdict and why ----
  function overview() {
    const v = D.verdict || "none";
    const h = el("h1", null, el("span", "badge " + v, v === "none" ? "no verdict" : v), " ", D.name);
    $("top").append(h);
    const box = $("overview");
    box.append(el("h2", null, "Why"));
    const ul = el("ul", "why");
    for (const line of D.why) ul.append(el("li", null, line));
    box.append(ul);
    const f = D.facts;
    let counts = f.items + " items" + (f.repeats > 1 ? " × " + f.repeats + " trials (" + f.trials + " trials)" : "")
      + ", " + f.errored_items + " items errored" + (f.errored_trials ? ", " + f.errored_trials + " trials errored" : "");
    if (f.interrupted) counts += " · interrupted: only the items that finished";
    box.append(el("p", "muted", counts));
    if (D.baseline) {
      const b = D.baseline;
      box.append(el("p", "muted", "Compared with the baseline " + b.name + (b.git_sha ? " @ " + b.git_sha.slice(0, 12) : "")
        + (b.created_at ? " (" + b.created_at + ")" : "") + ": " + b.matched + " items matched, " + b.new + " new, "
        + b.missing + " missing; " + b.correction + " across entries at " + Math.round((b.confidence || 0.95) * 100) + "%."));
      for (const w of b.warnings) box.append(el("p", "unsure", "⚠ " + w));
    }
  }

  // ---- entries with their intervals ----
  function intervalBar(e) {
    const W = 220, H = 18, x = (v) => 10 + Math.max(0, Math.min(1, v)) * (W - 20);
    const s = svg("svg", {width: W, height: H, role: "img"});
    s.append(svg("line", {x1: x(0), x2: x(1), y1: 9, y2: 9, class: "grid"}));
    for (const b of [e.min, e.max]) if (b !== null && e.kind !== "tracked") s.append(svg("line", {x1: x(b), x2: x(b), y1: 1, y2: 17, class: "bound"}));
    const cls = e.passed === null ? "s-none" : e.passed ? "s-improved" : "s-regressed";
    if (e.lo !== null && e.hi !== null) s.append(svg("line", {x1: x(e.lo), x2: x(e.hi), y1: 9, y2: 9, class: "ci " + cls}));
    if (e.avg !== null) s.append(svg("circle", {cx: x(e.avg), cy: 9, r: 4, class: "pt " + cls}));
    s.append(svg("title", {}, e.label + ": " + fmt(e.avg) + " " + interval(e.lo, e.hi) + (e.bound ? " · bound " + e.bound : "")));
    return s;
  }
  function entries() {
    const box = $("entries");
    box.append(el("h2", null, "Gates, thresholds and tracked scores"));
    const t = el("table");
    const compared = D.entries.some((e) => e.cmp);
    t.append(th("kind", "entry", "score [95% interval]", "0 ··· 1", "bound", "result",
      ...(compared ? ["base", "change [interval]", "against the base"] : [])));
    for (const e of D.entries) {
      const result = e.kind === "tracked" ? el("span", "muted", "tracked") : e.passed
        ? el("span", "ok", e.uncertain ? "pass (uncertain)" : "pass") : el("span", "bad", "fail");
      const row = el("tr", null, td(e.kind), td(e.label), td(fmt(e.avg) + " " + interval(e.lo, e.hi), "num"),
        el("td", null, intervalBar(e)), td(e.bound + (e.kind === "threshold" ? (e.hib ? " (higher is better)" : " (lower is better)") : "")),
        el("td", null, result));
      if (compared) {
        const c = e.cmp;
        row.append(td(c ? fmt(c.base) : "–", "num"), td(c ? signed(c.delta) + " " + interval(c.lo, c.hi, "s") + " " + better(e) : "", "num"),
          el("td", c && c.status === "regressed" ? "bad" : c && c.status === "improved" ? "ok" : c && c.status === "uncertain" ? "unsure" : null,
            c ? (STATUS_WORDS[c.status] || c.status) + (c.reason ? ": " + c.reason : "") : ""));
        if (c) row.lastChild.title = statsNote(c);
      }
      t.append(row);
      if (e.passk) t.append(el("tr", "muted", passkCell(e.passk, compared ? 9 : 6, e.passk_cmp)));
    }
    box.append(t);
  }
  function passkCell(rows, span, c) {  // [k, pass^k, lo, hi, pass@k, lo, hi] for k = 1..K: up to six of them shown
    const K = rows.length, ks = K <= 6 ? rows.map((r) => r[0]) : [1, 2, 3, Math.floor(K / 4), Math.floor(K / 2), K];
    const shown = rows.filter((r) => ks.includes(r[0]));
    const cell = el("td", null, "pass^k (all k trials of an item pass): "
      + shown.map((r) => "k=" + r[0] + " " + fmt(r[1], 2) + " " + interval(r[2], r[3])).join(" · ")
      + "; pass@k (at least one of k passes): "
      + shown.map((r) => "k=" + r[0] + " " + fmt(r[4], 2) + " " + interval(r[5], r[6])).join(" · ")
      + ". An errored trial counts as a failure."
      + (c ? " Against the base: pass^" + c.k + " " + fmt(c.base, 2) + " → " + fmt(c.head, 2) + ", Δ " + signed(c.delta) + " "
        + interval(c.lo, c.hi, "s") + ", " + (STATUS_WORDS[c.status] || c.status) + (c.gates ? "" : " (reported only)") : ""));
    cell.colSpan = span;
    return cell;
  }
  function statsNote(c) {
    const parts = [];
    if (c.method) parts.push(c.method);
    if (c.pairs) parts.push(c.pairs + " items paired");
    if (c.p !== null) parts.push("p = " + c.p.toPrecision(2));
    if (c.p_regression !== null) parts.push("p(drop beyond max_drop) = " + c.p_regression.toPrecision(2));
    for (const k in c.extra) parts.push(k + " = " + (typeof c.extra[k] === "number" ? c.extra[k].toPrecision(3) : c.extra[k]));
    return parts.join("; ");
  }

  // ---- the forest plot: each entry's change with its interval, against -max_drop ----
  function forest() {
    const rows = D.entries.filter((e) => e.cmp && e.cmp.delta !== null);
    if (!rows.length) return;
    const box = $("forest");
    box.append(el("h2", null, "Change against the baseline (better →)"));
    const o = rows.map((e) => {
      const c = e.cmp, s = e.hib ? 1 : -1;
      return {e, d: s * c.delta, lo: c.lo === null ? null : (s > 0 ? c.lo : -c.hi), hi: c.hi === null ? null : (s > 0 ? c.hi : -c.lo), drop: c.max_drop || 0};
    });
    let lo = -0.05, hi = 0.05;
    for (const r of o) { lo = Math.min(lo, r.lo ?? r.d, -r.drop); hi = Math.max(hi, r.hi ?? r.d); }
    const pad = (hi - lo) * 0.06; lo -= pad; hi += pad;
    const L = 270, W = 460, R = 300, RH = 24, top = 22;
    const x = (v) => L + (v - lo) / (hi - lo) * W;
    const s = svg("svg", {width: L + W + R, height: top + RH * o.length + 24, role: "img"});
    s.append(svg("line", {x1: x(0), x2: x(0), y1: top - 6, y2: top + RH * o.length, class: "axis"}));
    s.append(svg("text", {x: x(0), y: 12, "text-anchor": "middle"}, "0"));
    s.append(svg("text", {x: L, y: 12}, signed(lo)));
    s.append(svg("text", {x: L + W, y: 12, "text-anchor": "end"}, signed(hi)));
    o.forEach((r, i) => {
      const y = top + RH * i + RH / 2, cls = "s-" + (r.e.cmp.status || "none");
      s.append(svg("text", {x: 4, y: y + 4}, short(r.e.label, 42)));
      s.append(svg("line", {x1: x(-r.drop), x2: x(-r.drop), y1: y - 9, y2: y + 9, class: "drop"}));
      if (r.lo !== null && r.hi !== null) s.append(svg("line", {x1: x(r.lo), x2: x(r.hi), y1: y, y2: y, class: "ci " + cls}));
      s.append(svg("circle", {cx: x(r.d), cy: y, r: 5, class: "pt " + cls}));
      s.append(svg("text", {x: L + W + 10, y: y + 4}, signed(r.d) + " " + interval(r.lo, r.hi, "s") + " " + (STATUS_WORDS[r.e.cmp.status] || "")));
    });
    box.append(s);
    box.append(el("p", "legend small muted", el("span", null, "● change (head − base, so that right is better)"),
      el("span", null, "— its 95% interval"), el("span", "bad", "┆ −max_drop: an interval wholly left of it is a regression")));
  }

  // ---- the trend: the base branch's recent runs, then this one ----
  function trend() {
    const runs = D.history;
    if (!runs || runs.length < 2) return;
    const box = $("trend");
    box.append(el("h2", null, "Trend: the base branch's last " + (runs.length - 1) + " runs, then this run"));
    const wrap = el("div", "controls");
    for (const e of D.entries) {
      if (e.turn !== null) continue;
      const W = 300, H = 120, P = 24, n = runs.length;
      const x = (i) => P + (n === 1 ? 0 : i / (n - 1)) * (W - 2 * P), y = (v) => H - P + 4 - v * (H - 2 * P);
      const s = svg("svg", {width: W, height: H, role: "img"});
      s.append(svg("text", {x: 4, y: 12}, short(e.label, 44)));
      s.append(svg("line", {x1: P, x2: W - P, y1: y(0), y2: y(0), class: "axis"}));
      s.append(svg("line", {x1: P, x2: W - P, y1: y(1), y2: y(1), class: "grid"}));
      for (const b of [e.min, e.max]) if (b !== null) s.append(svg("line", {x1: P, x2: W - P, y1: y(b), y2: y(b), class: "bound"}));
      const pts = [];
      runs.forEach((r, i) => { const v = r.scores[e.id]; if (typeof v === "number") pts.push([x(i), y(v), r, v]); });
      if (pts.length > 1) s.append(svg("polyline", {points: pts.map((p) => p[0] + "," + p[1]).join(" "), fill: "none", stroke: "#0969da", "stroke-width": 1.5}));
      pts.forEach((p, i) => {
        const c = svg("circle", {cx: p[0], cy: p[1], r: i === pts.length - 1 ? 4.5 : 2.5, class: i === pts.length - 1 ? "pt s-regressed" : "pt s-none"});
        c.append(svg("title", {}, (p[2].sha || "") + " " + (p[2].at || "") + ": " + fmt(p[3])));
        s.append(c);
      });
      wrap.append(s);
    }
    box.append(wrap);
  }

  // ---- the items: filters, search, pages ----
  const cols = D.cols.map((i) => D.entries[i]);
  const state = {filter: "all", entry: -1, query: "", page: 0, shown: [], selected: -1};
  let hay = null;
  function failsAt(row, k) {
    if (k < 30) return (row[12] & (1 << k)) !== 0;  // decided on the exact score
    const v = row[5][k], e = cols[k];
    if (v === null || e.kind === "tracked") return false;
    if (e.kind === "gate") return v < 1;
    return (e.min !== null && v < e.min) || (e.max !== null && v > e.max);
  }
  function flakyAt(row, k) {
    const t = row[8];
    return !!t && t.length > 1 && t.some((x) => x[3][k] !== t[0][3][k]);
  }
  function flipAt(row, k, dir) { const b = D.base[row[0]]; return !!b && b[4][String(k)] === dir; }
  function erroredAt(row, k) { return !!row[4] || ((row[6][String(k)] || "").startsWith("error:")) || (!!row[8] && row[8].some((t) => t[2])); }
  const TESTS = {
    all: (r, k) => k < 0 || r[5][k] !== null,
    failing: (r, k) => k < 0 ? (r[7] & FAILING) !== 0 : failsAt(r, k),
    regressed: (r, k) => k < 0 ? (r[7] & REGRESSED) !== 0 : flipAt(r, k, "pass->fail"),
    improved: (r, k) => k < 0 ? (r[7] & IMPROVED) !== 0 : flipAt(r, k, "fail->pass"),
    flaky: (r, k) => k < 0 ? (r[7] & FLAKY) !== 0 : flakyAt(r, k),
    errored: (r, k) => k < 0 ? (r[7] & ERRORED) !== 0 : erroredAt(r, k),
  };
  function haystack(i) {
    if (hay === null) hay = new Array(D.items.length);
    if (hay[i] === undefined) {
      const r = D.items[i];
      hay[i] = (r[0] + "\n" + r[1] + "\n" + r[2] + "\n" + r[3] + "\n" + r[4] + "\n" + Object.values(r[6]).join("\n")).toLowerCase();
    }
    return hay[i];
  }
  function select() {
    const test = TESTS[state.filter], k = state.entry, q = state.query.toLowerCase(), out = [];
    for (let i = 0; i < D.items.length; i++) {
      if (test(D.items[i], k) && (!q || haystack(i).includes(q))) out.push(i);
    }
    state.shown = out;
  }
  function counts() {
    const n = {}, k = state.entry;
    for (const f in TESTS) n[f] = 0;
    for (const r of D.items) for (const f in TESTS) if (TESTS[f](r, k)) n[f]++;
    return n;
  }
  function itemsSection() {
    const box = $("items");
    box.append(el("h2", null, "Items"));
    const bar = el("div", "controls");
    bar.id = "filters";
    const entrySel = el("select");
    entrySel.id = "entry-filter";
    entrySel.append(new Option("every entry", "-1"));
    cols.forEach((e, k) => entrySel.append(new Option(e.label, String(k))));
    entrySel.addEventListener("change", () => { state.entry = Number(entrySel.value); refresh(true); });
    const search = el("input");
    search.type = "search"; search.id = "search"; search.placeholder = "search ids, inputs, outputs, reasons";
    let timer = 0;
    search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => { state.query = search.value; refresh(false); }, 120); });
    box.append(bar, el("div", "controls", "entry: ", entrySel, search));
    box.append(el("div", "pager", ""), el("table"), el("div", "pager", ""));
    if (D.field_limit < 20000) box.append(el("p", "small muted", "Texts longer than " + D.field_limit + " characters are cut here; the results JSON holds them whole."));
    refresh(true);
  }
  function refresh(recount) {
    const box = $("items");
    if (recount) {
      const n = counts(), bar = $("filters");
      bar.replaceChildren();
      for (const f in TESTS) {
        const b = el("button", f === state.filter ? "on" : null, f + " (" + n[f] + ")");
        b.dataset.filter = f;
        b.addEventListener("click", () => { state.filter = f; refresh(true); });
        bar.append(b);
      }
    }
    state.page = 0;
    select();
    drawPage();
  }
  function pager() {
    const total = state.shown.length, first = state.page * PAGE;
    const p = el("span", null, total ? (first + 1) + "–" + Math.min(total, first + PAGE) + " of " + total + " items" : "no item matches");
    const prev = el("button", null, "‹ previous"), next = el("button", null, "next ›");
    prev.disabled = state.page === 0;
    next.disabled = first + PAGE >= total;
    prev.addEventListener("click", () => { state.page--; drawPage(); });
    next.addEventListener("click", () => { state.page++; drawPage(); });
    return el("span", "controls", prev, p, next);
  }
  const FLAGS = [[FAILING, "failing"], [ERRORED, "errored"], [FLAKY, "flaky"], [REGRESSED, "regressed"], [IMPROVED, "improved"]];
  function drawPage() {
    const box = $("items"), pagers = box.querySelectorAll(".pager"), table = box.querySelector("table");
    pagers[0].replaceChildren(pager());
    pagers[1].replaceChildren(pager());
    table.replaceChildren(th("id", "", ...cols.map((e) => short(e.label, 24)), "output"));
    table.firstChild.querySelectorAll("th").forEach((h, j) => { if (j >= 2 && j < 2 + cols.length) h.title = cols[j - 2].label; });
    const first = state.page * PAGE;
    for (const i of state.shown.slice(first, first + PAGE)) {
      const r = D.items[i];
      const flags = el("td");
      for (const [bit, name] of FLAGS) if (r[7] & bit) flags.append(el("span", "flag f-" + name, name));
      const tr = el("tr", "item" + (i === state.selected ? " sel" : ""), el("td", "cut", r[0]), flags);
      r[5].forEach((v, k) => tr.append(el("td", "num " + (failsAt(r, k) ? "bad" : ""), fmt(v, 2))));
      tr.append(el("td", "cut", short(r[4] ? "error: " + r[4] : r[2], 200)));
      tr.dataset.index = String(i);
      tr.addEventListener("click", () => showItem(i));
      table.append(tr);
    }
  }

  // ---- one item ----
  function pre(text) { return el("pre", null, text); }
  function showItem(i) {
    state.selected = i;
    drawPage();
    const r = D.items[i], b = D.base[r[0]], box = $("detail");
    box.replaceChildren(el("h2", null, "Item ", el("code", null, r[0])));
    if (r[11]) r[11].forEach((t, n) => box.append(el("h3", null, "turn " + (n + 1)), pre(t[0]), pre(t[1])));
    box.append(el("h3", null, "input"), pre(r[1]));
    if (b) {
      const [baseMarked, headMarked] = diff(b[0], r[2]);
      box.append(el("h3", null, "output: the base's beside this run's (removed and added words marked)"),
        el("div", "sbs", el("div", null, el("div", "muted small", "base"), baseMarked, b[1] ? pre("error: " + b[1]) : null),
          el("div", null, el("div", "muted small", "head"), headMarked)));
    } else {
      box.append(el("h3", null, "output"), pre(r[2]));
    }
    if (r[3]) box.append(el("h3", null, "tool calls"), pre(r[3]));
    if (r[4]) box.append(el("h3", "bad", "error"), pre(r[4]));
    const t = el("table");
    t.append(th("entry", "score", "result", "reason", ...(b ? ["base score", "base reason", "change"] : [])));
    cols.forEach((e, k) => {
      const v = r[5][k];
      const row = el("tr", null, td(e.label), td(fmt(v), "num"),
        el("td", failsAt(r, k) ? "bad" : "ok", v === null ? "–" : e.kind === "tracked" ? "tracked" : failsAt(r, k) ? "fail" : "pass"),
        td(r[6][String(k)] || ""));
      if (b) row.append(td(fmt(b[2][k]), "num"), td(b[3][String(k)] || ""), td(b[4][String(k)] || ""));
      t.append(row);
    });
    box.append(el("h3", null, "scores"), t);
    if (r[8]) box.append(el("h3", null, "trials"), trialsTable(r[8]));
    const facts = [];
    if (r[9] !== null) facts.push(fmt(r[9], 0) + " ms");
    if (r[10] !== null) facts.push("$" + r[10].toPrecision(3));
    if (facts.length) box.append(el("p", "muted", facts.join(" · ")));
    box.scrollIntoView();
  }
  function trialsTable(trials) {
    const t = el("table");
    t.append(th("trial", ...cols.map((e) => short(e.label, 24)), "error", "output", "ms"));
    for (const x of trials) {
      const row = el("tr", null, td(String(x[0])));
      x[3].forEach((v) => row.append(td(fmt(v, 2), "num")));
      row.append(td(x[2], "bad"), el("td", "cut", short(x[1], 200)), td(fmt(x[4], 0), "num"));
      t.append(row);
    }
    return t;
  }
  // A word diff (longest common subsequence); past 4M cells, by lines; past that, unmarked.
  function diff(a, b) {
    let ta = a.split(/(\s+)/), tb = b.split(/(\s+)/);
    if (ta.length * tb.length > 4e6) { ta = a.split(/(\n)/); tb = b.split(/(\n)/); }
    const left = el("pre"), right = el("pre");
    if (ta.length * tb.length > 4e6) { left.append(a); right.append(b); return [left, right]; }
    const n = ta.length, m = tb.length, L = new Int32Array((n + 1) * (m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
      L[i * (m + 1) + j] = ta[i] === tb[j] ? L[(i + 1) * (m + 1) + j + 1] + 1 : Math.max(L[(i + 1) * (m + 1) + j], L[i * (m + 1) + j + 1]);
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && ta[i] === tb[j]) { left.append(ta[i]); right.append(tb[j]); i++; j++; }
      else if (j < m && (i === n || L[i * (m + 1) + j + 1] >= L[(i + 1) * (m + 1) + j])) { right.append(el("ins", null, tb[j])); j++; }
      else { left.append(el("del", null, ta[i])); i++; }
    }
    return [left, right];
  }

  // ---- the run: cost, timings, the judge ----
  function run() {
    const f = D.facts, box = $("run");
    box.append(el("h2", null, "Run"));
    const dl = el("dl", "facts");
    const add = (k, v) => { if (v !== null && v !== undefined && v !== "") dl.append(el("dt", null, k), el("dd", null, String(v))); };
    add("duration", f.duration_s === null ? null : f.duration_s.toFixed(1) + " s");
    add("cost", f.cost_usd === null ? null : "$" + f.cost_usd.toPrecision(4) + (f.target_usd ? " (target $" + f.target_usd.toPrecision(3) + ")" : ""));
    for (const k in f.cost_by_check) add("judge cost of " + k, f.cost_by_check[k] === null ? null : "$" + f.cost_by_check[k].toPrecision(3));
    if (f.judge) {
      const j = f.judge;
      add("judge", j.model + (j.calls !== null ? " · " + j.calls + " calls" : "") + (j.cached_calls ? " (" + j.cached_calls + " cached)" : "")
        + (j.failures ? " · " + j.failures + " failed" : "") + (j.tokens !== null ? " · " + j.tokens + " tokens" : "")
        + (j.cost_usd !== null ? " · $" + j.cost_usd.toPrecision(3) : ""));
      for (const k in j.prompts) add("prompt hash of " + k, j.prompts[k]);
    }
    add("most common error", f.top_error);
    add("created", f.created_at);
    add("commit", f.git_sha);
    add("evalgate", f.version);
    box.append(dl);
  }

  overview(); entries(); forest(); trend(); itemsSection(); run();
  performance.mark("evalgate-ready");
  document.body.dataset.ready = "1";
})();
