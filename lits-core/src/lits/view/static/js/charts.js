/* SVG bar charts and the calls-in-flight step chart. */
  // ---------- charts (SVG) ----------
  function barChart(title, rows, key) {
    var w = 420, rowH = 18, left = 110, right = 70, top = 22;
    var h = top + rows.length * rowH + 8;
    var max = Math.max.apply(null, rows.map(function (r) { return r[key]; }).concat([1]));
    var root = svg("svg", { viewBox: "0 0 " + w + " " + h, role: "img", "aria-label": title });
    root.appendChild(svg("text", { x: 4, y: 14, text: title, "font-weight": "600" }));
    rows.forEach(function (r, i) {
      var y = top + i * rowH;
      var bw = (w - left - right) * r[key] / max;
      root.appendChild(svg("text", { x: left - 6, y: y + 12, "text-anchor": "end", text: String(r.name).slice(0, 16) }));
      root.appendChild(svg("rect", { x: left, y: y + 2, width: Math.max(bw, 1), height: rowH - 5, fill: "#4c6ef5" }));
      root.appendChild(svg("text", { x: left + bw + 4, y: y + 12, text: fmt(r[key]) }));
    });
    return el("div", { cls: "chart" }, root);
  }
  function stepChart(title, points) {
    var w = 420, h = 170, l = 40, r = 10, t = 22, b = 30;
    var root = svg("svg", { viewBox: "0 0 " + w + " " + h, role: "img", "aria-label": title });
    root.appendChild(svg("text", { x: 4, y: 14, text: title, "font-weight": "600" }));
    if (!points.length) { root.appendChild(svg("text", { x: l, y: h / 2, text: "no calls recorded" })); return el("div", { cls: "chart" }, root); }
    var tmax = Math.max(points[points.length - 1][0], 1e-6);
    var ymax = Math.max.apply(null, points.map(function (p) { return p[1]; }).concat([1]));
    function X(v) { return l + (w - l - r) * v / tmax; }
    function Y(v) { return h - b - (h - t - b) * v / ymax; }
    var d = "M" + X(0) + "," + Y(0), prev = 0;
    points.forEach(function (p) { d += " L" + X(p[0]).toFixed(1) + "," + Y(prev).toFixed(1) + " L" + X(p[0]).toFixed(1) + "," + Y(p[1]).toFixed(1); prev = p[1]; });
    root.appendChild(svg("path", { d: d, fill: "none", stroke: "#e8590c", "stroke-width": 1.5 }));
    root.appendChild(svg("line", { x1: l, y1: h - b, x2: w - r, y2: h - b, stroke: "#999" }));
    root.appendChild(svg("line", { x1: l, y1: t, x2: l, y2: h - b, stroke: "#999" }));
    root.appendChild(svg("text", { x: l - 4, y: Y(ymax) + 4, "text-anchor": "end", text: String(ymax) }));
    root.appendChild(svg("text", { x: l - 4, y: h - b + 4, "text-anchor": "end", text: "0" }));
    root.appendChild(svg("text", { x: w - r, y: h - b + 14, "text-anchor": "end", text: fmt(tmax, 2) + " s" }));
    root.appendChild(svg("text", { x: (l + w) / 2, y: h - 4, "text-anchor": "middle", text: "seconds since the first call" }));
    root.appendChild(svg("text", { x: 12, y: (t + h - b) / 2, transform: "rotate(-90 12 " + (t + h - b) / 2 + ")", "text-anchor": "middle", text: "calls in flight" }));
    return el("div", { cls: "chart" }, root);
  }
  function costSection(costs) {
    var grid = el("div", { cls: "grid2" });
    [["component", costs.by_component], ["search phase", costs.by_phase], ["depth", costs.by_depth]].forEach(function (g) {
      if (!g[1].length) return;
      grid.appendChild(barChart("Calls by " + g[0], g[1], "calls"));
      grid.appendChild(barChart("Tokens by " + g[0], g[1].map(function (r) { return { name: r.name, tokens: r.tokens_in + r.tokens_out }; }), "tokens"));
    });
    grid.appendChild(stepChart("Calls in flight over time", costs.in_flight));
    return grid;
  }

  // ---------- the verifier's report card (lits eval --verifier) ----------
  function reliabilityChart(bins) {
    var w = 260, h = 260, l = 40, r = 10, t = 22, b = 34;
    var root = svg("svg", { viewBox: "0 0 " + w + " " + h, role: "img", "aria-label": "reliability diagram", id: "reliability", style: "max-width: 340px" });
    root.appendChild(svg("text", { x: 4, y: 14, text: "Reliability: share correct by step score", "font-weight": "600" }));
    function X(v) { return l + (w - l - r) * v; }
    function Y(v) { return h - b - (h - t - b) * v; }
    root.appendChild(svg("line", { x1: X(0), y1: Y(0), x2: X(1), y2: Y(1), stroke: "#bbb", "stroke-dasharray": "4 3" }));
    root.appendChild(svg("line", { x1: l, y1: h - b, x2: w - r, y2: h - b, stroke: "#999" }));
    root.appendChild(svg("line", { x1: l, y1: t, x2: l, y2: h - b, stroke: "#999" }));
    var most = Math.max.apply(null, bins.map(function (x) { return x.count; }).concat([1]));
    bins.forEach(function (x) {
      if (!x.count) return;
      var dot = svg("circle", { cx: X(x.mean_score).toFixed(1), cy: Y(x.share_correct).toFixed(1), r: (3 + 5 * Math.sqrt(x.count / most)).toFixed(1), fill: "#1c7ed6", "fill-opacity": 0.7, "class": "bin" });
      dot.appendChild(svg("title", { text: x.lo + "–" + x.hi + ": mean score " + fmt(x.mean_score, 3) + ", share correct " + fmt(x.share_correct, 3) + ", n=" + x.count }));
      root.appendChild(dot);
    });
    root.appendChild(svg("text", { x: l - 4, y: Y(1) + 4, "text-anchor": "end", text: "1" }));
    root.appendChild(svg("text", { x: l - 4, y: h - b + 4, "text-anchor": "end", text: "0" }));
    root.appendChild(svg("text", { x: w - r, y: h - b + 14, "text-anchor": "end", text: "1" }));
    root.appendChild(svg("text", { x: (l + w) / 2, y: h - 4, "text-anchor": "middle", text: "mean step score" }));
    root.appendChild(svg("text", { x: 12, y: (t + h - b) / 2, transform: "rotate(-90 12 " + (t + h - b) / 2 + ")", "text-anchor": "middle", text: "share correct" }));
    return el("div", { cls: "chart" }, root);
  }

  function verifierSection(v) {
    var pos = v.position || {}, pvo = v.process_vs_outcome || {};
    var facts = {
      "AUROC": fmt(v.auroc, 3), "scored nodes (correct under)": fmt(v.nodes) + " (" + fmt(v.positive) + ")",
      "AUROC by depth": (v.by_depth || []).map(function (d) { return d.depth + ": " + fmt(d.auroc, 3) + " (n=" + d.nodes + ")"; }).join(", "),
      "first candidate on top": pos.groups ? pct(pos.first_top) + " of " + pos.groups + " groups (95% " + pct(pos.interval[0]) + "–" + pct(pos.interval[1]) + "; chance " + pct(pos.chance) + ")" : "—",
      "process agrees with outcome": pvo.agree === null || pvo.agree === undefined ? "—" : pct(pvo.agree) + " of " + pvo.instances
    };
    var wrong = el("table", { id: "confident-wrong" });
    wrong.appendChild(el("tr", null, el("th", { text: "score" }), el("th", { text: "instance" }), el("th", { text: "node" }), el("th", { text: "step" })));
    (v.confident_wrong || []).forEach(function (n) {
      wrong.appendChild(el("tr", null, el("td", { cls: "num", text: fmt(n.score, 3) }), el("td", { text: n.instance }), el("td", { cls: "num", text: String(n.node) }), el("td", { text: n.step })));
    });
    return el("div", { cls: "grid2", id: "verifier" }, el("div", null, kvTable(facts), el("h3", { text: "Confident but wrong" }), wrong), reliabilityChart(v.calibration || []));
  }
