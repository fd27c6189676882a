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
