/* Routing between the pages (#/ and #/tree/I[/node/N]) and auto-refresh when served. */
  function showTree(idx, nodeId) {
    api.page = "tree"; api.drawnAt = null;
    clear(crumbs);
    crumbs.appendChild(el("a", { href: "#/", text: DATA.run.name })); crumbs.appendChild(el("span", { text: " / instance " + idx }));
    if (!DATA.trees[idx]) { clear(app); app.appendChild(el("p", { text: "Instance " + idx + " has no tree yet." })); return; }
    var view = TreeView(idx);
    if (nodeId !== undefined) { view.centerOn(Number(nodeId)); view.select(Number(nodeId)); }
  }

  function route() {
    var m = location.hash.match(/^#\/tree\/(\d+)(?:\/node\/(\d+))?/);
    window.scrollTo(0, 0);
    if (m) showTree(m[1], m[2]); else showRun();
  }

  // served by `lits view --serve`: each load re-reads the run, so a running search can refresh itself
  function autoRefresh() {
    if (location.protocol.indexOf("http") !== 0) return;
    var key = "lits-auto-refresh", box = el("input", { type: "checkbox", id: "auto-refresh" });
    box.checked = sessionStorage.getItem(key) === "1";
    var timer = null;
    function arm() { if (timer) clearTimeout(timer); timer = box.checked ? setTimeout(function () { location.reload(); }, 5000) : null; }
    box.addEventListener("change", function () { sessionStorage.setItem(key, box.checked ? "1" : "0"); arm(); });
    document.getElementById("top").insertBefore(el("label", { cls: "muted" }, box, " re-read the run every 5 s"), document.getElementById("generated"));
    arm();
  }
  window.addEventListener("hashchange", route);
  autoRefresh();
  route();
