/* The tree page: the search tree on a canvas (layout, colour, zoom, pan, collapse, iterations) and the details panel. */
  // ---------- tree page ----------
  var PALETTE = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  function ramp(t) {
    t = Math.max(0, Math.min(1, t)) * (PALETTE.length - 1);
    var i = Math.min(Math.floor(t), PALETTE.length - 2), f = t - i, a = PALETTE[i], b = PALETTE[i + 1];
    return "rgb(" + Math.round(a[0] + f * (b[0] - a[0])) + "," + Math.round(a[1] + f * (b[1] - a[1])) + "," + Math.round(a[2] + f * (b[2] - a[2])) + ")";
  }
  var DEFAULT_VISIBLE = 1500, COLW = 240, ROWH = 22, R = 6;

  function TreeView(idx) {
    var tree = DATA.trees[idx], inst = DATA.instances.filter(function (r) { return String(r.idx) === String(idx); })[0] || {};
    var nodes = tree.nodes, n = nodes.length, byId = {}, kids = [];
    nodes.forEach(function (node, i) { byId[node.id] = i; kids.push([]); });
    var parentIx = nodes.map(function (node) { return node.parent === null || byId[node.parent] === undefined ? -1 : byId[node.parent]; });
    parentIx.forEach(function (p, i) { if (p >= 0) kids[p].push(i); });
    var hasVisits = tree.paths.length > 0;
    // the slider's range: search iterations, or a chain's steps; every node exists at the end of it
    var maxIter = nodes.reduce(function (m, x) { return Math.max(m, x.born); }, Math.max(tree.iterations, tree.paths.length, 0));
    var self = { idx: idx, tree: tree, nodes: nodes, iteration: maxIter, metric: hasVisits ? "q" : (nodes.some(function (x) { return x.score !== undefined; }) ? "score" : "reward"),
      collapsed: new Uint8Array(n), scale: 1, tx: 20, ty: 20, selected: -1 };
    var shared = {};
    Object.keys(tree.node_calls).forEach(function (k) { tree.node_calls[k].forEach(function (c) { shared[c] = (shared[c] || 0) + 1; }); });

    // default collapse: open the tree level by level up to DEFAULT_VISIBLE nodes; the selected path stays open
    (function () {
      var count = 1, frontier = nodes.length ? [0] : [];
      while (frontier.length) {
        var next = [];
        frontier.forEach(function (i) { kids[i].forEach(function (c) { next.push(c); }); });
        if (count + next.length > DEFAULT_VISIBLE) { frontier.forEach(function (i) { if (kids[i].length && !nodes[i].on_path) self.collapsed[i] = 1; }); next = next.filter(function (c) { return nodes[parentIx[c]].on_path; }); }
        count += next.length; frontier = next;
      }
    })();

    function descendants(i) { var s = 0, stack = kids[i].slice(); while (stack.length) { var c = stack.pop(); s++; for (var j = 0; j < kids[c].length; j++) stack.push(kids[c][j]); } return s; }

    // per-iteration visits and Q, from the journaled paths with the search's backup (mean or max of the rewards below)
    var statCache = {};
    function statsAt(t) {
      if (!hasVisits) return null;
      if (statCache[t]) return statCache[t];
      var visits = new Float64Array(n), qsum = new Float64Array(n);
      for (var k = 0; k < Math.min(t, tree.paths.length); k++) {
        var path = [], i = byId[tree.paths[k]];
        while (i !== undefined && i >= 0) { path.push(i); i = parentIx[i]; }
        path.reverse();
        var rewards = path.slice(1).map(function (j) { return nodes[j].reward || 0; });
        for (var p = 0; p < path.length; p++) {
          var tail = rewards.slice(Math.max(p, 1) - 1), v = 0;
          if (tail.length) v = tree.aggregate === "max" ? Math.max.apply(null, tail) : tail.reduce(function (a, b) { return a + b; }, 0) / tail.length;
          visits[path[p]] += 1; qsum[path[p]] += v;
        }
      }
      statCache = {}; statCache[t] = { visits: visits, qsum: qsum };
      return statCache[t];
    }
    function value(i, metric) {
      var node = nodes[i];
      if (metric === "visits" || metric === "q") {
        var s = statsAt(self.iteration); if (!s) return null;
        if (metric === "visits") return s.visits[i];
        return s.visits[i] ? s.qsum[i] / s.visits[i] : null;
      }
      var v = node[metric]; return v === undefined ? null : v;
    }
    function alive(i) { return nodes[i].born <= self.iteration; }

    // layout: depth along x, leaves one row each, a parent centred on its children
    var px = new Float64Array(n), py = new Float64Array(n), visible = [];
    function layout() {
      visible = [];
      if (!n) return;
      var row = 0, stack = [[0, 0]];
      while (stack.length) {
        var top = stack[stack.length - 1], i = top[0];
        if (top[1] === 0) { visible.push(i); px[i] = nodes[i].depth * COLW; }
        var open = self.collapsed[i] ? [] : kids[i];
        if (top[1] < open.length) { top[1]++; stack.push([open[top[1] - 1], 0]); continue; }
        stack.pop();
        if (!open.length) { py[i] = row * ROWH; row++; }
        else py[i] = (py[open[0]] + py[open[open.length - 1]]) / 2;
      }
      canvas.dataset.visibleCount = String(visible.length);
    }

    // ---- DOM ----
    clear(app);
    var solvedTag = inst.solved === null || inst.solved === undefined ? "running" : inst.solved ? "solved" : "not solved";
    app.appendChild(el("h1", null, "Instance " + idx + (inst.id ? " · " + inst.id : "") + " ",
      el("span", { cls: "tag " + (inst.solved ? "good" : inst.solved === false ? "bad" : "path"), text: solvedTag })));
    app.appendChild(el("div", { cls: "muted", text: inst.query || "" }));
    if (tree.path_only) app.appendChild(el("p", { cls: "dup", id: "path-only", text: "This instance's journal (checkpoints/) is gone: only its selected path (paths/) is drawn." }));
    var info = el("div", { cls: "cards" }, card("kind", tree.kind === "chain" ? "chain (one path)" : DATA.run.method),
      card("nodes", fmt(n)), card("stopped", fmt(inst.stopped)), card("iterations", fmt(inst.iterations)),
      card("calls", fmt(inst.calls)), card("tokens", fmt(inst.tokens)));
    var dups = tree.proposals.filter(function (p) { return p[1]; }).length;
    if (tree.proposals.length) info.appendChild(card("duplicate proposals", dups + " / " + tree.proposals.length));
    var invalid = nodes.filter(function (x) { return x.error; }).length;
    info.appendChild(card("invalid steps", fmt(invalid)));
    app.appendChild(info);

    var metricSel = el("select", { id: "metric" });
    ["reward", "fast_reward", "q", "visits", "score"].forEach(function (m) {
      if ((m === "q" || m === "visits") && !hasVisits) return;
      if (m === "score" && !nodes.some(function (x) { return x.score !== undefined; })) return;
      metricSel.appendChild(el("option", { value: m, text: m === "q" ? "Q" : m.replace("_", " ") }));
    });
    metricSel.value = self.metric;
    metricSel.addEventListener("change", function () { self.metric = metricSel.value; draw(); });
    var legend = el("span", { cls: "legend" }, el("span", { id: "legend-min" }), el("span", { cls: "bar", style: "background:linear-gradient(90deg," + [0, .25, .5, .75, 1].map(ramp).join(",") + ")" }), el("span", { id: "legend-max" }));
    var toolbar = el("div", { cls: "toolbar" }, el("label", { text: "colour by" }), metricSel, legend);
    if (maxIter > 0) {
      var slider = el("input", { type: "range", id: "iteration", min: "0", max: String(maxIter), value: String(maxIter) });
      var sliderLabel = el("span", { id: "iteration-label" });
      slider.addEventListener("input", function () { self.iteration = Number(slider.value); draw(); });
      toolbar.appendChild(el("label", { text: tree.kind === "chain" ? "after step" : "after iteration" })); toolbar.appendChild(slider); toolbar.appendChild(sliderLabel);
    }
    toolbar.appendChild(el("button", { text: "fit", onclick: function () { fit(); draw(); } }));
    toolbar.appendChild(el("button", { text: "expand all", onclick: function () { self.collapsed.fill(0); layout(); draw(); } }));
    toolbar.appendChild(el("button", { text: "collapse to path", onclick: function () {
      nodes.forEach(function (x, i) { self.collapsed[i] = kids[i].length && !x.on_path ? 1 : 0; }); layout(); fit(); draw(); } }));
    toolbar.appendChild(el("span", { cls: "muted", text: "drag to pan · wheel to zoom · click a node for details · double-click to collapse/expand" }));
    toolbar.appendChild(el("span", { cls: "muted", id: "marks", text: "■ terminal · orange: selected path · green ring: solved · red ✕: invalid step · hollow: proposed, never visited · +N: collapsed" }));
    app.appendChild(toolbar);
    var canvas = el("canvas", { id: "tree-canvas", "data-node-count": String(n) });
    var details = el("aside", { id: "details" }, el("p", { cls: "muted", text: "Click a node to see its state, action, rewards and model calls." }));
    app.appendChild(el("div", { cls: "treewrap" }, canvas, details));
    if (tree.proposals.length) {
      var plist = el("table", { id: "proposals" }, el("tr", null, el("th", { text: "proposal" }), el("th", { text: "duplicate of a sibling" })));
      tree.proposals.forEach(function (p) { plist.appendChild(el("tr", { cls: p[1] ? "dup" : "" }, el("td", { text: p[0] }), el("td", { text: p[1] ? "duplicate" : "" }))); });
      app.appendChild(el("details", null, el("summary", { text: "Policy proposals (" + tree.proposals.length + ", " + dups + " duplicates)" }), plist));
    }
    app.appendChild(el("h2", { text: "Cost of this instance" }));
    app.appendChild(costSection(tree.costs));

    var ctx = canvas.getContext("2d");
    function resize() {
      var ratio = window.devicePixelRatio || 1, rect = canvas.getBoundingClientRect();
      canvas.width = Math.max(1, Math.round(rect.width * ratio)); canvas.height = Math.max(1, Math.round(rect.height * ratio));
      ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    }
    function fit() {
      var rect = canvas.getBoundingClientRect(), maxX = 0, maxY = 0;
      visible.forEach(function (i) { if (px[i] > maxX) maxX = px[i]; if (py[i] > maxY) maxY = py[i]; });
      var sx = (rect.width - 240) / Math.max(maxX, 1), sy = (rect.height - 40) / Math.max(maxY, 1);
      self.scale = Math.max(0.001, Math.min(1.5, Math.min(sx, sy)));
      self.tx = 20; self.ty = 20 + Math.max(0, (rect.height - 40 - maxY * self.scale) / 2);
    }

    function initialView() {  // the whole tree if it is readable so, else a readable band around the root
      fit();
      if (self.scale >= 0.5 || !n) return;
      var rect = canvas.getBoundingClientRect();
      self.scale = 0.7; self.tx = 20; self.ty = rect.height / 2 - py[0] * self.scale;  // the root, readable
    }

    // visits span orders of magnitude (the root has them all): a log scale keeps the rest apart
    function shade(v, lo, hi, metric) {
      if (!(hi > lo)) return 0.5;
      if (metric === "visits") return Math.log(1 + v - lo) / Math.log(1 + hi - lo);
      return (v - lo) / (hi - lo);
    }
    // the rollout of the iteration the slider stands at (MCTS): the path that iteration backed up
    function rolloutOf(t) {
      var on = {}, i = t >= 1 && t <= tree.paths.length ? byId[tree.paths[t - 1]] : undefined;
      while (i !== undefined && i >= 0) { on[i] = true; i = parentIx[i]; }
      return on;
    }

    function draw() {
      var rect = canvas.getBoundingClientRect(), W = rect.width, H = rect.height, s = self.scale;
      ctx.clearRect(0, 0, W, H);
      var metric = self.metric, lo = Infinity, hi = -Infinity, i, k;
      for (k = 0; k < visible.length; k++) { i = visible[k]; if (!alive(i)) continue; var v = value(i, metric); if (v !== null) { if (v < lo) lo = v; if (v > hi) hi = v; } }
      if (lo === Infinity) { lo = 0; hi = 1; }
      document.getElementById("legend-min").textContent = fmt(lo); document.getElementById("legend-max").textContent = fmt(hi);
      if (maxIter > 0) document.getElementById("iteration-label").textContent = self.iteration + " / " + maxIter +
        (self.iteration < maxIter && self.iteration >= 1 && self.iteration <= tree.paths.length ? " · dashed blue: iteration " + self.iteration + "'s rollout" : "");
      function sx(x) { return x * s + self.tx; } function sy(y) { return y * s + self.ty; }
      function inView(x, y) { return x > -200 && x < W + 50 && y > -20 && y < H + 20; }
      // edges: ordinary ones in one stroke, the selected path over them
      ctx.lineWidth = 1; ctx.strokeStyle = "#b8c0cc"; ctx.beginPath();
      var pathEdges = [];
      for (k = 0; k < visible.length; k++) {
        i = visible[k]; var p = parentIx[i]; if (p < 0 || !alive(i)) continue;
        var x0 = sx(px[p]), y0 = sy(py[p]), x1 = sx(px[i]), y1 = sy(py[i]);
        if (!inView(x0, y0) && !inView(x1, y1) && !(Math.min(y0, y1) < H && Math.max(y0, y1) > 0 && x1 > 0 && x0 < W)) continue;
        if (nodes[i].on_path && nodes[p].on_path) { pathEdges.push([x0, y0, x1, y1]); continue; }
        ctx.moveTo(x0, y0); ctx.bezierCurveTo((x0 + x1) / 2, y0, (x0 + x1) / 2, y1, x1, y1);
      }
      ctx.stroke();
      ctx.lineWidth = 3; ctx.strokeStyle = "#e8590c"; ctx.beginPath();
      pathEdges.forEach(function (e) { ctx.moveTo(e[0], e[1]); ctx.bezierCurveTo((e[0] + e[2]) / 2, e[1], (e[0] + e[2]) / 2, e[3], e[2], e[3]); });
      ctx.stroke();
      var rollout = self.iteration < maxIter ? rolloutOf(self.iteration) : {};  // stepping: show that iteration's rollout
      ctx.lineWidth = 2; ctx.strokeStyle = "#1c7ed6"; ctx.setLineDash([6, 4]); ctx.beginPath();
      for (k = 0; k < visible.length; k++) {
        i = visible[k]; var q = parentIx[i]; if (q < 0 || !rollout[i]) continue;
        var a0 = sx(px[q]), b0 = sy(py[q]), a1 = sx(px[i]), b1 = sy(py[i]);
        ctx.moveTo(a0, b0); ctx.bezierCurveTo((a0 + a1) / 2, b0, (a0 + a1) / 2, b1, a1, b1);
      }
      ctx.stroke(); ctx.setLineDash([]);
      self.rolloutIds = Object.keys(rollout).map(function (j) { return nodes[Number(j)].id; }).sort(function (a, b) { return a - b; });
      var r = Math.max(2, Math.min(R, R * s * 1.5)), labels = s > 0.45, drawn = 0;
      var maxChars = Math.floor((COLW * s - 2 * r - 10) / 6.5);
      ctx.font = "12px system-ui, sans-serif"; ctx.textBaseline = "middle";
      for (k = 0; k < visible.length; k++) {
        i = visible[k]; if (!alive(i)) continue;
        var x = sx(px[i]), y = sy(py[i]); if (!inView(x, y)) continue;
        drawn++;
        var node = nodes[i], val = value(i, metric);
        var fill = !node.materialized ? "#ffffff" : val === null ? "#c8ccd2" : ramp(shade(val, lo, hi, metric));
        ctx.beginPath();
        if (node.terminal) ctx.rect(x - r, y - r, 2 * r, 2 * r); else ctx.arc(x, y, r, 0, 2 * Math.PI);
        ctx.fillStyle = fill; ctx.fill();
        ctx.lineWidth = node.on_path ? 2.5 : 1; ctx.strokeStyle = node.on_path ? "#e8590c" : "#6b7280"; ctx.stroke();
        if (node.terminal && node.on_path && inst.solved) { ctx.beginPath(); ctx.arc(x, y, r + 4, 0, 2 * Math.PI); ctx.lineWidth = 2; ctx.strokeStyle = "#2b8a3e"; ctx.stroke(); }
        if (node.error) { ctx.beginPath(); ctx.moveTo(x - r, y - r); ctx.lineTo(x + r, y + r); ctx.moveTo(x + r, y - r); ctx.lineTo(x - r, y + r); ctx.lineWidth = 2; ctx.strokeStyle = "#c92a2a"; ctx.stroke(); }
        if (i === self.selected) { ctx.beginPath(); ctx.arc(x, y, r + 7, 0, 2 * Math.PI); ctx.lineWidth = 2; ctx.strokeStyle = "#1d2330"; ctx.stroke(); }
        if (labels && self.collapsed[i] && kids[i].length) { ctx.fillStyle = "#1d2330"; ctx.fillText("+" + descendants(i), x + r + 3, y - 9); }
        if (labels) {
          var text = node.label.length > maxChars ? node.label.slice(0, Math.max(1, maxChars - 1)) + "…" : node.label;
          ctx.lineWidth = 3; ctx.strokeStyle = "rgba(252,252,253,0.9)"; ctx.strokeText(text, x + r + 4, y);
          ctx.fillStyle = node.error ? "#c92a2a" : "#1d2330"; ctx.fillText(text, x + r + 4, y);
        }
      }
      canvas.dataset.drawnCount = String(drawn);
      if (!api.drawnAt) api.drawnAt = performance.now();
      canvas.dataset.rendered = "1";
    }

    function hit(clientX, clientY) {
      var rect = canvas.getBoundingClientRect(), x = clientX - rect.left, y = clientY - rect.top;
      var best = -1, bestD = Infinity, r2 = Math.pow(Math.max(R, R * self.scale * 1.5) + 4, 2);
      visible.forEach(function (i) {
        if (!alive(i)) return;
        var dx = px[i] * self.scale + self.tx - x, dy = py[i] * self.scale + self.ty - y, d = dx * dx + dy * dy;
        if (d < bestD && d <= r2) { best = i; bestD = d; }
      });
      return best;
    }

    function showDetails(i) {
      self.selected = i; clear(details);
      if (i < 0) return;
      if (history.replaceState) history.replaceState(null, "", "#/tree/" + idx + "/node/" + nodes[i].id);  // a reload comes back here
      var node = nodes[i], tags = el("div");
      if (node.on_path) tags.appendChild(el("span", { cls: "tag path", text: "on the selected path" }));
      if (node.terminal) tags.appendChild(el("span", { cls: "tag " + (node.on_path && inst.solved ? "good" : ""), text: node.on_path && inst.solved ? "terminal · solved" : "terminal" }));
      if (node.error) tags.appendChild(el("span", { cls: "tag bad", text: "invalid step" }));
      if (!node.materialized) tags.appendChild(el("span", { cls: "tag", text: "proposed, never visited" }));
      details.appendChild(el("h3", { id: "details-title", text: "node " + node.id + (tree.kind === "chain" ? " (step " + node.depth + ")" : "") }));
      details.appendChild(tags);
      var dl = el("dl", { cls: "kv" });
      function row(k, v) { dl.appendChild(el("dt", { text: k })); dl.appendChild(el("dd", { text: v })); }
      row("depth", fmt(node.depth)); row("parent", fmt(node.parent));
      row("fast reward", fmt(node.fast_reward)); row("reward", fmt(node.reward));
      if (hasVisits) { row("visits", fmt(value(i, "visits"))); row("Q", fmt(value(i, "q"), 4)); }
      if (node.score !== undefined) row("score (cum. reward)", fmt(node.score));
      if (tree.kind === "search") row("exists after iteration", fmt(node.born));
      if (kids[i].length) row("children", fmt(kids[i].length));
      details.appendChild(dl);
      if (node.error) details.appendChild(el("pre", { cls: "dup", text: "error: " + node.error }));
      [["action", node.detail.action], ["state (this node's part)", node.detail.state]].forEach(function (p) {
        if (p[1]) { details.appendChild(el("h3", { text: p[0] })); details.appendChild(el("pre", { text: p[1] })); }
      });
      if (node.detail.step && node.detail.step !== node.detail.action) details.appendChild(el("details", null, el("summary", { text: "step" }), el("pre", { text: node.detail.step })));
      var bn = node.detail.branching;  // Chain-in-Tree: did the node need branching, and why
      if (bn) details.appendChild(el("pre", { text: (bn.branch ? "branched" : "continued as a chain") + " (" + bn.method + ", score " + bn.score + "): " + bn.why }));
      [["reward details", node.detail.reward_details], ["fast reward details", node.detail.fast_reward_details]].forEach(function (p) {
        if (Object.keys(p[1]).length) details.appendChild(el("details", null, el("summary", { text: p[0] }), el("pre", { text: JSON.stringify(p[1], null, 1) })));
      });
      if (kids[i].length) details.appendChild(el("button", { text: self.collapsed[i] ? "expand subtree" : "collapse subtree", onclick: function () { toggle(i); } }));
      var mine = tree.node_calls[String(node.id)] || [];
      details.appendChild(el("h3", { text: "Model calls (" + mine.length + ")" }));
      if (mine.length) {
        var F = DATA.call_fields, t0 = tree.calls.length ? tree.calls[0][0] - tree.calls[0][1] : 0;
        var table = el("table", { id: "node-calls" }, el("tr", null, el("th", { text: "component" }), el("th", { text: "phase" }), el("th", { text: "it." }),
          el("th", { cls: "num", text: "in" }), el("th", { cls: "num", text: "out" }), el("th", { cls: "num", text: "ms" }), el("th", { cls: "num", text: "at s" })));
        mine.forEach(function (ci) {
          var c = tree.calls[ci], rec = {}; F.forEach(function (f, j) { rec[f] = c[j]; });
          table.appendChild(el("tr", null, el("td", { text: fmt(rec.component) + (rec.kind && rec.kind !== "generate" ? " · " + rec.kind : "") + (rec.cached ? " (cached)" : "") + (shared[ci] > 1 ? " ·shared×" + shared[ci] : "") }),
            el("td", { text: fmt(rec.phase) }), el("td", { text: fmt(rec.iteration) }), el("td", { cls: "num", text: fmt(rec.tokens_in) }),
            el("td", { cls: "num", text: fmt(rec.tokens_out) }), el("td", { cls: "num", text: (1000 * rec.seconds).toFixed(1) }),
            el("td", { cls: "num", text: (rec.time - rec.seconds - t0).toFixed(2) })));
          if (rec.prompt || rec.reply) table.appendChild(el("tr", null, el("td", { colspan: "7" }, el("details", null, el("summary", { text: "prompt and reply" }),
            el("pre", { text: (rec.prompt ? "PROMPT\n" + (typeof rec.prompt === "string" ? rec.prompt : JSON.stringify(rec.prompt, null, 1)) : "") +
              (rec.reply ? "\n\nREPLY\n" + (typeof rec.reply === "string" ? rec.reply : JSON.stringify(rec.reply, null, 1)) : "") })))));
        });
        details.appendChild(table);
        if (mine.some(function (ci) { return shared[ci] > 1; })) details.appendChild(el("p", { cls: "muted", text: "Calls marked shared were made for several nodes of this depth at once (the log records depth and iteration, not nodes)." }));
      } else details.appendChild(el("p", { cls: "muted", text: "No model call is recorded for this node (a deterministic step, a cached call or a node only proposed)." }));
      draw();
    }
    function toggle(i) {  // the node stays where it is on screen; its subtree closes or opens around it
      if (!kids[i].length) return;
      var x = px[i], y = py[i];
      self.collapsed[i] = self.collapsed[i] ? 0 : 1; layout();
      self.tx += (x - px[i]) * self.scale; self.ty += (y - py[i]) * self.scale;
      draw(); if (self.selected === i) showDetails(i);
    }

    // ---- interaction ----
    var drag = null;
    canvas.addEventListener("pointerdown", function (e) { drag = { x: e.clientX, y: e.clientY, tx: self.tx, ty: self.ty, moved: false }; canvas.setPointerCapture(e.pointerId); });
    canvas.addEventListener("pointermove", function (e) {
      if (!drag) return; var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (drag.moved) { self.tx = drag.tx + dx; self.ty = drag.ty + dy; draw(); }
    });
    canvas.addEventListener("pointerup", function (e) { var d = drag; drag = null; if (d && !d.moved) { var i = hit(e.clientX, e.clientY); if (i >= 0) showDetails(i); } });
    canvas.addEventListener("dblclick", function (e) { var i = hit(e.clientX, e.clientY); if (i >= 0) toggle(i); });
    canvas.addEventListener("wheel", function (e) {
      e.preventDefault();
      var rect = canvas.getBoundingClientRect(), mx = e.clientX - rect.left, my = e.clientY - rect.top;
      var f = Math.exp(-e.deltaY * 0.0015), s = Math.max(0.001, Math.min(4, self.scale * f));
      self.tx = mx - (mx - self.tx) * s / self.scale; self.ty = my - (my - self.ty) * s / self.scale; self.scale = s; draw();
    }, { passive: false });
    var onResize = function () { if (api.tree !== self) { window.removeEventListener("resize", onResize); return; } resize(); draw(); };
    window.addEventListener("resize", onResize);

    // ---- test and scripting hooks ----
    self.nodeCount = n;
    self.visibleCount = function () { return visible.length; };
    self.pathIds = function () { return nodes.filter(function (x) { return x.on_path; }).map(function (x) { return x.id; }); };
    self.screenPos = function (id) {
      var i = byId[id], rect = canvas.getBoundingClientRect();
      if (i === undefined || visible.indexOf(i) < 0) return null;
      return { x: rect.left + px[i] * self.scale + self.tx, y: rect.top + py[i] * self.scale + self.ty };
    };
    self.centerOn = function (id) {  // pan so the node is in the middle of the canvas
      var i = byId[id], rect = canvas.getBoundingClientRect();
      if (i === undefined || visible.indexOf(i) < 0) return;
      self.tx = rect.width / 2 - px[i] * self.scale; self.ty = rect.height / 2 - py[i] * self.scale; draw();
    };
    self.isShown = function (id) { var i = byId[id]; return i !== undefined && visible.indexOf(i) >= 0 && alive(i); };
    self.select = function (id) { var i = byId[id]; if (i !== undefined) showDetails(i); };
    self.setIteration = function (t) { self.iteration = t; if (slider) slider.value = String(t); draw(); };
    self.valueOf = function (id, metric) { return value(byId[id], metric); };
    self.toggle = function (id) { toggle(byId[id]); };

    api.tree = self;
    resize(); layout(); initialView(); draw();
    return self;
  }
