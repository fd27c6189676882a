/* The page's data and small DOM helpers (first part of the viewer's script). */
  var DATA = JSON.parse(document.getElementById("lits-data").textContent);
  var app = document.getElementById("app");
  var crumbs = document.getElementById("crumbs");
  var api = window.litsView = { page: null, data: DATA };

  // ---------- small helpers ----------
  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "cls") node.className = attrs[k];
      else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), attrs[k]);
      else node.setAttribute(k, attrs[k]);
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return node;
  }
  function svg(tag, attrs) {
    var node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (var k in attrs || {}) { if (k === "text") node.textContent = attrs[k]; else node.setAttribute(k, attrs[k]); }
    return node;
  }
  function fmt(x, digits) {
    if (x === null || x === undefined || x === "") return "—";
    if (typeof x === "boolean") return x ? "yes" : "no";
    if (typeof x !== "number") return String(x);
    if (Number.isInteger(x)) return x.toLocaleString("en-US");
    return x.toFixed(digits === undefined ? 3 : digits).replace(/\.?0+$/, "");
  }
  function pct(x) { return x === null || x === undefined ? "—" : (100 * x).toFixed(1) + "%"; }
  function card(k, v) { return el("div", { cls: "card" }, el("div", { cls: "v", text: v }), el("div", { cls: "k", text: k })); }
  function kvTable(obj) {
    var table = el("table");
    Object.keys(obj).forEach(function (k) {
      var v = obj[k];
      var cell = (v !== null && typeof v === "object") ? el("pre", { text: JSON.stringify(v, null, 1) }) : fmt(v);
      table.appendChild(el("tr", null, el("th", { text: k }), el("td", null, cell)));
    });
    return table;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
