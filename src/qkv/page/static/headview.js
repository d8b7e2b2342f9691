// The head view (qkv.page.headview.head_view, chapter pretrained-model): a line
// from each token on the left to every token it attends to, thicker for a larger
// weight; hover or focus a token on the left (Tab, then the arrow keys) to see
// only its attention. Built by qkvWidget (widget.js) in the markup that Python
// writes (HeadView._live).

/* exported qkvHeadView */
/* global qkvIsolate */

function qkvHeadView(root, data) {
  var layerSelect = root.querySelector(".qkv-hv-layer");
  var headSelect = root.querySelector(".qkv-hv-head");
  var left = root.querySelectorAll(".qkv-hv-left .qkv-hv-token");
  var right = root.querySelectorAll(".qkv-hv-right .qkv-hv-token");
  var svg = root.querySelector(".qkv-hv-lines");
  var status = root.querySelector(".qkv-hv-status");
  var NS = "http://www.w3.org/2000/svg";
  var lang = ((root.closest("[lang]") || document.documentElement)
    .getAttribute("lang") || "en").slice(0, 2).toLowerCase();
  var labels = data.labels[lang] || data.labels.en;
  function weight(x) {
    var text = x.toFixed(2);
    return lang === "fr" ? text.replace(".", ",") : text;
  }
  root.querySelector(".qkv-hv-layer-name").textContent = labels.layer;
  root.querySelector(".qkv-hv-head-name").textContent = labels.head;
  root.querySelector(".qkv-hv-left").setAttribute("aria-label", labels.attending);
  root.querySelector(".qkv-hv-right").setAttribute("aria-label", labels.attended);
  var ROW = data.row_height, WIDTH = data.lines_width, n = data.tokens.length;
  var active = null;

  function current() {
    return data.weights[+layerSelect.value][+headSelect.value];
  }

  function draw() {
    var w = current();
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    for (var i = 0; i < n; i++) {
      if (active !== null && i !== active) { continue; }
      for (var j = 0; j < n; j++) {
        var a = w[i][j];
        if (a < 0.01) { continue; }
        var line = document.createElementNS(NS, "line");
        line.setAttribute("x1", 0);
        line.setAttribute("y1", ROW * i + ROW / 2);
        line.setAttribute("x2", WIDTH);
        line.setAttribute("y2", ROW * j + ROW / 2);
        line.setAttribute("stroke", "#3b528b");
        line.setAttribute("stroke-width", active === null ? 0.5 + 3 * a : 1 + 10 * a);
        line.setAttribute("stroke-opacity", active === null ? a : Math.min(1, 0.3 + a));
        line.setAttribute("class", "qkv-hv-line");
        svg.appendChild(line);
      }
    }
    for (var k = 0; k < n; k++) {
      left[k].classList.toggle("qkv-hv-active", k === active);
      left[k].setAttribute("aria-pressed", k === active ? "true" : "false");
      var shade = active === null ? 0 : w[active][k];
      right[k].style.backgroundColor = active === null ? "" :
        "rgba(94, 201, 98, " + shade.toFixed(3) + ")";
      right[k].setAttribute("data-weight", active === null ? "" : shade.toFixed(3));
    }
    if (active === null) {
      status.textContent = labels.idle;
      return;
    }
    var order = [];
    for (var m = 0; m < n; m++) { order.push(m); }
    order.sort(function (x, y) { return w[active][y] - w[active][x]; });
    var parts = [];
    for (var t = 0; t < Math.min(3, n); t++) {
      parts.push(qkvIsolate(data.tokens[order[t]]) + " " + weight(w[active][order[t]]));
    }
    status.textContent = labels.looks.split("{token}").join(qkvIsolate(data.tokens[active]))
      .split("{top}").join(parts.join(labels.sep));
  }

  function activate(i) { active = i; draw(); }
  function release() { active = null; draw(); }
  for (var i = 0; i < n; i++) {
    (function (index) {
      var el = left[index];
      el.addEventListener("mouseenter", function () { activate(index); });
      el.addEventListener("focus", function () { activate(index); });
      el.addEventListener("mouseleave", function () {
        if (document.activeElement !== el) { release(); }
      });
      el.addEventListener("blur", release);
      el.addEventListener("keydown", function (event) {
        var step = event.key === "ArrowDown" ? 1 : event.key === "ArrowUp" ? -1 : 0;
        if (step && left[index + step]) {
          event.preventDefault();
          left[index + step].focus();
        }
      });
    })(i);
  }
  layerSelect.addEventListener("change", draw);
  headSelect.addEventListener("change", draw);
  draw();
}
