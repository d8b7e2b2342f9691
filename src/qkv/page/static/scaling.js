// An explorable, the size of the scores (qkv.page.explorables.scaled_scores, chapter
// scaled-dot-product): a slider for d_k and a switch for the division by
// sqrt(d_k), on random vectors drawn from a seed by qkvSeededNormal (seeded.js).
// Built by qkvWidget (widget.js) with the tools of qkvExplorable (explorable.js).

/* exported qkvScaledScores */
/* global qkvExplorable, qkvSeededNormal */

function qkvScaledScores(root, data, live) {
  var {t, el, fmt, num, finite, softmax, paint, publish, title, labelled, status,
    warning} = qkvExplorable(root, data, live);
  var L = data.n_queries, S = data.n_keys, Dmax = data.max_d_k, dec = data.decimals;
  var seed = data.seed, Q, K, extent, NS = "http://www.w3.org/2000/svg";
  function dot(i, j, dk) {
    var s = 0;
    for (var c = 0; c < dk; c++) { s += Q[i * Dmax + c] * K[j * Dmax + c]; }
    return s;
  }
  function generate() {
    var all = qkvSeededNormal(seed, (L + S) * Dmax);
    Q = all.subarray(0, L * Dmax);
    K = all.subarray(L * Dmax);
    var widest = 1;
    for (var i = 0; i < L; i++) {
      for (var j = 0; j < S; j++) {
        widest = Math.max(widest, Math.abs(dot(i, j, Dmax)));
      }
    }
    var step = Math.pow(10, Math.floor(Math.log10(widest)));
    extent = Math.ceil(widest / step) * step;
  }
  function svg(tag, attrs) {
    var node = document.createElementNS(NS, tag);
    for (var name in attrs) { node.setAttribute(name, attrs[name]); }
    return node;
  }
  title(t("title"));
  var slider = el("input", {type: "range", min: 0, step: 1,
    max: Math.round(Math.log(Dmax) / Math.LN2),
    value: Math.round(Math.log(data.d_k) / Math.LN2)});
  var sliderLabel = labelled(slider, t("dk"));
  var shown = el("output", {"for": slider.id});
  var box = el("input", {type: "checkbox"});
  box.checked = data.scaled;
  var boxLabel = labelled(box, t("scale"));
  var redraw = el("button", {type: "button"}, t("redraw"));
  var seedText = el("span");
  live.appendChild(el("div", {"class": "qkv-x-controls"}, [
    el("span", {}, [sliderLabel, slider, shown]),
    el("span", {}, [box, " ", boxLabel]),
    el("span", {}, [redraw, " ", seedText])]));
  var said = status(), overflow = live.appendChild(warning());
  var width = 560, rowHeight = 9, height = L * rowHeight + 28;
  var plot = svg("svg", {viewBox: "0 0 " + width + " " + height, width: width,
    height: height, "aria-hidden": "true", style: "max-width:100%;height:auto"});
  live.appendChild(el("p", {"class": "qkv-x-legend"}, t("axis")));
  live.appendChild(plot);
  var cells = [], head = [el("th", {scope: "col"}, t("corner"))], rows = [];
  for (var j = 0; j < S; j++) { head.push(el("th", {scope: "col"}, "k" + (j + 1))); }
  for (var i = 0; i < L; i++) {
    cells.push([]);
    var row = [el("th", {scope: "row"}, "q" + (i + 1))];
    for (j = 0; j < S; j++) { cells[i].push(el("td")); row.push(cells[i][j]); }
    rows.push(el("tr", {}, row));
  }
  live.appendChild(el("table", {}, [
    el("caption", {}, t("caption", {rows: L, cols: S})),
    el("thead", {}, el("tr", {}, head)), el("tbody", {}, rows)]));

  function drawScores(scores) {
    while (plot.firstChild) { plot.removeChild(plot.firstChild); }
    var left = 20, right = width - 20, axisY = L * rowHeight + 6;
    function at(v) { return left + (v + extent) / (2 * extent) * (right - left); }
    plot.appendChild(svg("line", {x1: left, x2: right, y1: axisY, y2: axisY,
      stroke: "currentColor"}));
    [-1, -0.5, 0, 0.5, 1].forEach(function (f) {
      var x = at(f * extent);
      plot.appendChild(svg("line", {x1: x, x2: x, y1: axisY, y2: axisY + 4,
        stroke: "currentColor"}));
      var label = svg("text", {x: x, y: axisY + 17, "text-anchor": "middle"});
      label.textContent = num(f * extent);
      plot.appendChild(label);
    });
    scores.forEach(function (row, i) {
      row.forEach(function (s) {
        plot.appendChild(svg("circle", {cx: at(Math.max(-extent, Math.min(extent, s))),
          cy: 4 + i * rowHeight, r: 3, fill: "var(--qkv-accent)",
          "fill-opacity": 0.75}));
      });
    });
  }
  function update() {
    var dk = Math.pow(2, +slider.value), scale = box.checked ? 1 / Math.sqrt(dk) : 1;
    var scores = [], weights = [], sum = 0, squares = 0, top = 0, onehot = 0;
    for (var i = 0; i < L; i++) {
      var row = [];
      for (var j = 0; j < S; j++) {
        row.push(dot(i, j, dk) * scale);
        sum += row[j];
        squares += row[j] * row[j];
      }
      scores.push(row);
      weights.push(softmax(row));
      var best = Math.max.apply(null, weights[i]);
      top += best / L;
      onehot += best > 0.99 ? 1 : 0;
      for (j = 0; j < S; j++) {
        cells[i][j].textContent = fmt(weights[i][j], dec);
        paint(cells[i][j], weights[i][j], 1);
      }
    }
    var mean = sum / (L * S);
    var sd = Math.sqrt(Math.max(0, squares / (L * S) - mean * mean));
    shown.textContent = t("dkValue", {dk: dk});
    slider.setAttribute("aria-valuetext", t("dkValue", {dk: dk}));
    seedText.textContent = t("seed", {seed: seed});
    said.textContent = t("stats", {sd: fmt(sd, 2), sqrt: fmt(Math.sqrt(dk), 2),
      top: fmt(top, 3), uniform: fmt(1 / S, 3), onehot: onehot, rows: L});
    overflow.textContent = finite([scores, weights]) ? "" : t("overflow");
    drawScores(scores);
    publish("weights", weights);
    publish("scores", scores);
    root.setAttribute("data-d-k", dk);
    root.setAttribute("data-scaled", box.checked);
    root.setAttribute("data-seed", seed);
  }
  slider.addEventListener("input", update);
  box.addEventListener("change", update);
  redraw.addEventListener("click", function () {
    seed = (seed + 1) % 4294967296;
    generate();
    update();
  });
  generate();
  update();
}
