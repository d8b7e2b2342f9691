// An explorable, rotary positions (qkv.page.explorables.rope_offsets, chapter positions):
// rotate a query and keys by their positions (RoPE); the scores depend only on
// the offsets.
// Built by qkvWidget (widget.js) with the tools of qkvExplorable (explorable.js).

/* exported qkvRopeOffsets */
/* global qkvExplorable */

function qkvRopeOffsets(root, data, live) {
  var {t, el, fmt, finite, softmax, publish, title, labelled, status, warning} =
    qkvExplorable(root, data, live);
  var q = data.query, K = data.keys, words = data.words, E = q.length, S = K.length;
  var P = data.max_position, half = E / 2, dec = data.decimals, theta = [];
  var NS = "http://www.w3.org/2000/svg";
  for (var h = 0; h < half; h++) { theta.push(Math.pow(data.base, -2 * h / E)); }
  function pair(i) {
    return data.pairs === "halves" ? [i, i + half] : [2 * i, 2 * i + 1];
  }
  function rotate(v, p) {
    var out = v.slice();
    for (var i = 0; i < half; i++) {
      var ab = pair(i), c = Math.cos(p * theta[i]), s = Math.sin(p * theta[i]);
      out[ab[0]] = v[ab[0]] * c - v[ab[1]] * s;
      out[ab[1]] = v[ab[0]] * s + v[ab[1]] * c;
    }
    return out;
  }
  function svg(tag, attrs) {
    var node = document.createElementNS(NS, tag);
    for (var name in attrs) { node.setAttribute(name, attrs[name]); }
    return node;
  }
  title(t("title"));
  function slider(value) {
    return el("input", {type: "range", min: 0, max: P, step: 1, value: value});
  }
  var mSlider = slider(data.query_position), nSlider = slider(data.key_position);
  var mLabel = labelled(mSlider, t("m")), nLabel = labelled(nSlider, t("n"));
  var mOut = el("output", {"for": mSlider.id});
  var nOut = el("output", {"for": nSlider.id});
  var together = el("input", {type: "checkbox"}), togetherLabel = labelled(together,
    t("together"));
  var chosen = el("select", {}, words.map(function (w, j) {
    return el("option", {value: j}, w);
  }));
  var chosenLabel = labelled(chosen, t("dials"));
  live.appendChild(el("div", {"class": "qkv-x-controls"}, [
    el("span", {}, [mLabel, mSlider, mOut]), el("span", {}, [nLabel, nSlider, nOut]),
    el("span", {}, [together, " ", togetherLabel])]));
  var caption = el("caption"), rows = [];
  words.forEach(function (word) {
    rows.push(el("tr", {}, [el("th", {scope: "row"}, word), el("td"), el("td"),
      el("td"), el("td")]));
  });
  live.appendChild(el("table", {}, [caption, el("thead", {}, el("tr", {},
    ["key", "position", "offset", "score", "weight"].map(function (k) {
      return el("th", {scope: "col"}, t(k));
    }))), el("tbody", {}, rows)]));
  var said = status(), overflow = live.appendChild(warning());
  live.appendChild(el("div", {"class": "qkv-x-controls"}, [chosenLabel, chosen]));
  live.appendChild(el("p", {"class": "qkv-x-legend", "aria-hidden": "true"}, [
    el("span", {"class": "qkv-x-swatch", style: "background:var(--qkv-accent)"}),
    t("query"),
    el("span", {"class": "qkv-x-swatch", style: "background:var(--qkv-second)"}),
    t("keyLegend")]));
  var dials = live.appendChild(el("div", {"class": "qkv-x-dials",
    "aria-hidden": "true"}));
  var last = {m: +mSlider.value, n: +nSlider.value};

  function arrow(parent, a, b, scale, colour) {
    parent.appendChild(svg("line", {x1: 40, y1: 40, x2: 40 + a * scale,
      y2: 40 - b * scale, stroke: colour, "stroke-width": 3,
      "stroke-linecap": "round"}));
  }
  function drawDials(qr, kr) {
    while (dials.firstChild) { dials.removeChild(dials.firstChild); }
    for (var i = 0; i < half; i++) {
      var ab = pair(i), box = svg("svg", {width: 80, height: 80, viewBox: "0 0 80 80"});
      var longest = Math.max(Math.hypot(qr[ab[0]], qr[ab[1]]),
        Math.hypot(kr[ab[0]], kr[ab[1]]), 1e-12);
      box.appendChild(svg("circle", {cx: 40, cy: 40, r: 34, fill: "none",
        stroke: "currentColor", "stroke-opacity": 0.4}));
      arrow(box, qr[ab[0]], qr[ab[1]], 34 / longest, "var(--qkv-accent)");
      arrow(box, kr[ab[0]], kr[ab[1]], 34 / longest, "var(--qkv-second)");
      dials.appendChild(el("figure", {}, [box,
        el("figcaption", {}, t("pair", {i: i}))]));
    }
  }
  function update() {
    var m = +mSlider.value, n = +nSlider.value, qr = rotate(q, m), scores = [];
    var rotated = K.map(function (k, j) { return rotate(k, n + j); });
    rotated.forEach(function (kr) {
      var s = 0;
      for (var c = 0; c < E; c++) { s += qr[c] * kr[c]; }
      scores.push(s);
    });
    var weights = softmax(scores.map(function (s) { return s * data.scale; }));
    rows.forEach(function (row, j) {
      var cells = row.querySelectorAll("td");
      cells[0].textContent = String(n + j);
      cells[1].textContent = String(m - n - j);
      cells[2].textContent = fmt(scores[j], dec);
      cells[3].textContent = fmt(weights[j], dec);
    });
    mOut.textContent = String(m);
    nOut.textContent = String(n);
    caption.textContent = t("caption", {m: m, n: n});
    said.textContent = t("status", {m: m, n: n, last: n + S - 1, first: m - n,
      lastOffset: m - n - S + 1});
    overflow.textContent = finite([scores, weights]) ? "" : t("overflow");
    drawDials(qr, rotated[+chosen.value]);
    publish("weights", weights);
    publish("scores", scores);
    publish("positions", [m, n]);
  }
  function moved(which) {
    var m = +mSlider.value, n = +nSlider.value;
    if (together.checked) {
      var delta = which === "m" ? m - last.m : n - last.n;
      delta = Math.max(-Math.min(last.m, last.n), Math.min(P - Math.max(last.m, last.n),
        delta));
      m = last.m + delta;
      n = last.n + delta;
      mSlider.value = m;
      nSlider.value = n;
    }
    last = {m: m, n: n};
    update();
  }
  mSlider.addEventListener("input", function () { moved("m"); });
  nSlider.addEventListener("input", function () { moved("n"); });
  chosen.addEventListener("change", update);
  update();
}
