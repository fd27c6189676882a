/* The run page: totals, instances, cost pictures, metrics, configuration. */
  // ---------- run page ----------
  function showRun() {
    api.page = "run"; api.tree = null;
    var run = DATA.run, s = run.summary || {};
    clear(app); clear(crumbs);
    crumbs.appendChild(el("span", { text: run.name }));
    app.appendChild(el("h1", null, run.method + " · " + run.dataset + " · " + run.model));
    app.appendChild(el("div", { cls: "muted", text: run.dir }));
    if (run.models) app.appendChild(el("div", { id: "run-models", text: "models: " + run.models }));
    var acc = s.accuracy !== undefined ? s.accuracy : (run.finished ? run.solved / run.finished : null);
    var inf = run.inference;
    var cards = el("div", { cls: "cards", id: "run-cards" },
      card("accuracy" + (run.running ? " (so far)" : ""), pct(acc)),
      card("instances", run.finished + (run.running ? " + " + run.running + " running" : "")),
      card("solved", fmt(run.solved)), card("calls", fmt(inf.calls) + (inf.cache_hits ? " (+" + fmt(inf.cache_hits) + " cached)" : "")),
      card("tokens in / out", fmt(inf.tokens_in) + " / " + fmt(inf.tokens_out)),
      card("model seconds", fmt(inf.seconds, 2)), card("cost", "$" + fmt(inf.cost, 4)));
    var sp = run.spend;
    if (sp) {  // what the servers did: requests, prompt tokens from their cache, per solved instance
      cards.appendChild(card("server requests", fmt(sp.requests)));
      cards.appendChild(card("prompt tokens cached", sp.cached_share === null ? "not reported" : fmt(sp.cached_prompt_tokens) + " (" + pct(sp.cached_share) + ")"));
      cards.appendChild(card("evaluated prompt tokens / solved", fmt(sp.evaluated_prompt_tokens_per_solved === null ? null : Math.round(sp.evaluated_prompt_tokens_per_solved))));
      cards.appendChild(card("model seconds / solved", fmt(sp.model_seconds_per_solved, 2)));
      if (sp.queued_seconds) cards.appendChild(card("queued for a slot (s)", fmt(sp.queued_seconds, 2)));
    }
    if (run.invalid_replies) cards.appendChild(card("invalid replies", run.invalid_replies));
    if (s.run_seconds !== undefined) cards.appendChild(card("run seconds", fmt(s.run_seconds, 2)));
    if (s.calls_in_flight_avg !== undefined && s.calls_in_flight_avg !== null) cards.appendChild(card("calls in flight (avg)", fmt(s.calls_in_flight_avg, 2)));
    app.appendChild(cards);

    app.appendChild(el("h2", { text: "Instances" }));
    var table = el("table", { id: "instances" });
    var head = ["#", "id", "query", "status", "solved", "answer", "stopped", "iterations / steps", "nodes", "calls", "tokens", "seconds", "invalid replies"];
    table.appendChild(el("tr", null, head.map(function (x) { return el("th", { text: x }); }).reduce(function (f, n) { f.appendChild(n); return f; }, document.createDocumentFragment())));
    DATA.instances.forEach(function (r) {
      var link = r.has_tree ? el("a", { href: "#/tree/" + r.idx, text: String(r.idx) }) : String(r.idx);
      var solved = r.solved === null ? el("span", { cls: "run", text: "…" }) : el("span", { cls: r.solved ? "yes" : "no", text: r.solved ? "yes" : "no" });
      var tr = el("tr", { "data-idx": r.idx }, el("td", null, link), el("td", { text: r.id || "" }), el("td", { text: r.query }),
        el("td", { cls: r.status === "running" ? "run" : "", text: r.status }), el("td", null, solved), el("td", { text: fmt(r.answer) }),
        el("td", { text: fmt(r.stopped) }), el("td", { cls: "num", text: fmt(r.iterations) }), el("td", { cls: "num", text: fmt(r.nodes) }),
        el("td", { cls: "num", text: fmt(r.calls) }), el("td", { cls: "num", text: fmt(r.tokens) }), el("td", { cls: "num", text: fmt(r.seconds, 2) }),
        el("td", { cls: "num", text: r.invalid_replies || "" }));
      table.appendChild(tr);
    });
    app.appendChild(table);

    app.appendChild(el("h2", { text: "Cost" }));
    app.appendChild(costSection(DATA.costs));

    if (s.verifier) {
      app.appendChild(el("h2", { text: "Verifier" }));
      app.appendChild(verifierSection(s.verifier));
    }

    if (run.summary) {
      app.appendChild(el("h2", { text: "Metrics" }));
      var flat = {}, nested = el("div", { cls: "grid2" });
      Object.keys(s).forEach(function (k) {
        if (k === "config" || k === "verifier") return;
        if (s[k] !== null && typeof s[k] === "object" && !Array.isArray(s[k])) nested.appendChild(el("div", null, el("h3", { text: k }), kvTable(s[k])));
        else flat[k] = s[k];
      });
      app.appendChild(el("div", { cls: "grid2" }, el("div", null, kvTable(flat)), nested));
    }
    app.appendChild(el("h2", { text: "Configuration" }));
    var config = Object.assign({}, run.config); var env = config.environment; delete config.environment;
    app.appendChild(kvTable(config));
    if (env) app.appendChild(el("details", null, el("summary", { text: "environment" }), el("pre", { text: JSON.stringify(env, null, 1) })));
    api.rendered = true;
  }
