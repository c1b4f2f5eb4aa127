// benchfleet's published history. No library, no network: the data are scripts beside the
// pages (a page opened from disk may not fetch JSON), and a series loads only when shown.
"use strict";

function el(tag, attrs, ...children) {
  const svg = ["svg", "path", "circle", "line", "text", "title", "g", "a", "polyline"];
  const node = svg.includes(tag) && tag !== "a"
    ? document.createElementNS("http://www.w3.org/2000/svg", tag)
    : tag === "a" && attrs && attrs.svg
      ? document.createElementNS("http://www.w3.org/2000/svg", "a")
      : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k !== "svg") node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

function fmt(x) { return x === null || x === undefined ? "" : Number(x).toFixed(2); }

function recordHref(p) { return "records/" + encodeURIComponent(p.sweep_id) + ".html"; }

function checkText(p) {
  return p.check_ok === true ? "check passes" : p.check_ok === false ? "check fails" : "no record";
}

const METRIC_NAMES = {decode_tps: "decode tok/s", prefill_tps: "prefill tok/s"};

// Commits on x (in first-parent order), y from 0 as the record's plots, the mean with its
// min-max band, flagged points hollow, steps as dashed lines with their change.
function plotSeries(s, width, height) {
  const placed = s.points.filter(p => p.position !== null);
  const pad = 48, w = width - 2 * pad, h = height - 2 * pad;
  const lo = 0, hi = Math.max(...placed.map(p => p.max)) * 1.05 || 1;
  const x = i => pad + (placed.length > 1 ? i * w / (placed.length - 1) : w / 2);
  const y = v => pad + h - (v - lo) * h / (hi - lo);
  const svg = el("svg", {width, height, viewBox: `0 0 ${width} ${height}`, id: "plot"});
  for (const v of [0, hi / 2, hi]) {
    svg.append(el("line", {class: "grid", x1: pad, x2: pad + w, y1: y(v), y2: y(v)}));
    svg.append(el("text", {class: "axis", x: pad - 4, y: y(v) + 4, "text-anchor": "end"},
      v.toFixed(0)));
  }
  svg.append(el("text", {class: "axis", x: 12, y: pad + h / 2, "text-anchor": "middle",
    transform: `rotate(-90 12 ${pad + h / 2})`},
    `${METRIC_NAMES[s.metric] || s.metric} (higher is better)`));
  svg.append(el("text", {class: "axis", x: pad + w / 2, y: height - 10, "text-anchor": "middle"},
    "commits, oldest first (first-parent order)"));
  const top = placed.map((p, i) => `${x(i)},${y(p.max)}`);
  const bottom = placed.map((p, i) => `${x(i)},${y(p.min)}`).reverse();
  svg.append(el("path", {class: "band", d: "M" + top.concat(bottom).join("L") + "Z"}));
  const used = placed.map((p, i) => [p, i]).filter(([p]) => p.used);
  svg.append(el("polyline", {class: "mean",
    points: used.map(([p, i]) => `${x(i)},${y(p.mean)}`).join(" ")}));
  for (const [commit, step] of s.steps) {
    const i = placed.findIndex(p => p.commit === commit && p.used);
    const at = (x(i - 1) + x(i)) / 2;
    svg.append(el("line", {class: "step" + (step.kept ? "" : " dropped"), x1: at, x2: at,
      y1: pad, y2: pad + h}));
    if (step.kept) {
      svg.append(el("text", {class: "axis", x: at + 3, y: pad - 6},
        `${(step.change * 100).toFixed(1)}% at ${commit.slice(0, 8)}`));
    }
  }
  placed.forEach((p, i) => {
    const cls = "point" + (p.flags.length ? " flagged" : "") + (p.check_ok === false ? " failing" : "");
    const dot = el("circle", {class: cls, cx: x(i), cy: y(p.mean), r: 4,
      "data-commit": p.commit, "data-sweep": p.sweep_id});
    dot.append(el("title", {}, `${p.commit.slice(0, 12)}: ${fmt(p.mean)} (${fmt(p.min)} to ` +
      `${fmt(p.max)}), n ${p.n}; ${checkText(p)}` + (p.flags.length ? `; flagged: ${p.flags.join(", ")} (not used)` : "")));
    const link = el("a", {svg: true, href: recordHref(p), class: "point-link"});
    link.append(dot);
    svg.append(link);
  });
  return svg;
}

// What the plot's marks are, beside it (not in it: the plot holds only the series' points).
function legend() {
  const key = (cls, text) => el("span", {class: "key"},
    el("svg", {width: 22, height: 14}, cls === "band"
      ? el("path", {class: "band", d: "M1,2L21,2L21,12L1,12Z"})
      : cls.startsWith("step")
        ? el("line", {class: cls, x1: 11, x2: 11, y1: 0, y2: 14})
        : el("circle", {class: cls, cx: 11, cy: 7, r: 4})), " " + text);
  return el("p", {class: "legend"}, key("point", "a record's mean (the line joins those used)"),
    key("band", "its min to max"), key("point flagged", "flagged: shown, not used in the fit"),
    key("point failing", "its record fails check"), key("step", "a step, a candidate"),
    key("step dropped", "a step a filter dropped"));
}

function sparkline(o) {
  const width = 160, height = 30;
  if (!o.line.length) return el("span", {}, "");
  const vals = o.line.map(([, v]) => v), lo = Math.min(...vals), hi = Math.max(...vals);
  const n = o.line.length;
  const pts = o.line.map(([, v], i) => `${n > 1 ? i * width / (n - 1) : 0},` +
    `${height - 2 - (hi > lo ? (v - lo) * (height - 4) / (hi - lo) : height / 2)}`);
  return el("svg", {width, height}, el("polyline", {class: "mean", points: pts.join(" ")}));
}

function showIndex(data) {
  const main = document.getElementById("main");
  const beds = el("table", {}, el("tr", {}, el("th", {}, "testbed"), el("th", {}, "fields")));
  for (const [id, fields] of Object.entries(data.testbeds)) {
    beds.append(el("tr", {}, el("td", {}, id),
      el("td", {}, Object.entries(fields).map(([k, v]) => `${k} ${v}`).join("; "))));
  }
  main.append(el("h2", {}, "Testbeds"), beds, el("h2", {}, "Series"));
  const table = el("table", {id: "series"}, el("tr", {}, ...["testbed", "model", "arm",
    "metric", "points", "flagged", "steps", "latest", "overview"].map(t => el("th", {}, t))));
  for (const o of data.series) {
    table.append(el("tr", {}, el("td", {}, o.testbed), el("td", {}, o.model),
      el("td", {}, el("a", {href: "series.html?id=" + o.id, class: "series-link"}, o.arm)),
      el("td", {}, o.metric), el("td", {class: "num"}, String(o.points)),
      el("td", {class: "num"}, String(o.flagged)), el("td", {class: "num"}, String(o.steps)),
      el("td", {class: "num"}, fmt(o.latest)), el("td", {}, sparkline(o))));
  }
  main.append(table);
  for (const n of data.notes) main.append(el("p", {class: "note"}, "note: " + n));
}

function showRegressions(data) {
  const main = document.getElementById("main");
  const table = el("table", {id: "regressions"}, el("tr", {}, ...["state", "series", "step",
    "change", "evidence", "confirmation", "bisect"].map(t => el("th", {}, t))));
  for (const r of data.regressions) {
    const c = r.candidate, s = c.step, v = r.verdict;
    table.append(el("tr", {}, el("td", {class: "state-" + r.state.replace(" ", "-")}, r.state),
      el("td", {}, `${c.testbed} · ${c.model} · ${c.arm} · ${c.metric}`),
      el("td", {}, `${c.before.slice(0, 12)}..${c.commit.slice(0, 12)}`),
      el("td", {class: "num"}, `${(s.change * 100).toFixed(1)}%`),
      el("td", {}, `p ${s.pvalue.toPrecision(2)}, ${s.multiple.toFixed(1)}x the spread, ` +
        `steppiness ${s.steppiness.toFixed(2)}, ${s.segment_before}+${s.segment_after} commits`),
      el("td", {}, v ? v.reason : ""), el("td", {}, v && v.bisect ? v.bisect : "")));
  }
  main.append(data.regressions.length ? table : el("p", {}, "no regression candidates"));
}

// series.html?id=X: the one series' script is added to the page only now.
function loadSeries() {
  const id = new URLSearchParams(location.search).get("id") || "";
  if (!/^[0-9a-f]{16}$/.test(id)) return;
  window.bfSeries = s => {
    const main = document.getElementById("main");
    main.append(el("h2", {}, `${s.testbed} · ${s.model} · ${s.arm} · ${s.metric}`));
    main.append(plotSeries(s, 1000, 380), legend());
    const table = el("table", {id: "points"}, el("tr", {}, ...["commit", "n", "mean",
      "min to max", "flags", "record"].map(t => el("th", {}, t))));
    for (const p of s.points) {
      table.append(el("tr", {}, el("td", {}, p.commit.slice(0, 12) +
        (p.position === null ? " (not on the branch)" : "")), el("td", {class: "num"}, String(p.n)),
        el("td", {class: "num"}, fmt(p.mean)), el("td", {}, `${fmt(p.min)} to ${fmt(p.max)}`),
        el("td", {}, p.flags.join(", ") + (p.flags.length ? " (not used)" : "")),
        el("td", {}, el("a", {href: recordHref(p)}, `${p.sweep_id} (${checkText(p)})`))));
    }
    main.append(table);
  };
  document.body.append(el("script", {src: "data/series/" + id + ".js"}));
}
