// An explorable, the mask (qkv.page.explorables.mask_editor, chapter masking): tick the
// pairs that may attend, or pick a causal or padding mask; a query that may
// attend to nothing gets zero weights, as in qkv. The boxes are one grid
// (WAI-ARIA Authoring Practices, grid pattern): one tab stop, the arrow keys
// move between the boxes (Home/End: the row's first/last, Ctrl+Home/Ctrl+End:
// the grid's, Page Up/Page Down: the column's), Space ticks.
// Built by qkvWidget (widget.js) with the tools of qkvExplorable (explorable.js).

/* exported qkvMaskEditor */
/* global qkvExplorable */

function qkvMaskEditor(root, data, live) {
  var {t, el, fmt, parse, numberBox, finite, softmax, paint, publish, title, labelled,
    status, warning, maxOf} = qkvExplorable(root, data, live);
  var words = data.words, x = data.x, T = words.length, dec = data.decimals;
  var mask = data.mask.map(function (row) { return row.slice(); });
  var scores = x.map(function (xi) {  // x @ x.T * scale
    return x.map(function (xj) {
      var s = 0;
      for (var k = 0; k < xi.length; k++) { s += xi[k] * xj[k]; }
      return s * data.scale;
    });
  });
  title(t("title"));
  var preset = el("select", {}, data.presets.map(function (name) {
    return el("option", {value: name}, t("preset_" + name));
  }));
  var presetLabel = labelled(preset, t("preset"));
  var real = numberBox(data.real_words, {whole: true, min: 1, max: T});
  var realLabel = labelled(real, t("real"));
  live.appendChild(el("div", {"class": "qkv-x-controls"}, [
    el("span", {}, [presetLabel, preset]), el("span", {}, [realLabel, real])]));
  var realWarning = live.appendChild(warning(real));
  function pattern(name, n) {
    return words.map(function (_, i) {
      return words.map(function (_, j) {
        if (name === "all") { return true; }
        if (name === "causal") { return j <= i; }
        if (name === "padding") { return j < n; }
        return j <= i && j >= T - n;  // causal, padding in front
      });
    });
  }
  function header(extra, grid) {
    var role = grid ? "columnheader" : null;
    return el("thead", {}, el("tr", {}, [el("th", {scope: "col", role: role},
      t("corner"))]
      .concat(words.map(function (w) {
        return el("th", {scope: "col", role: role}, w);
      }))
      .concat(extra ? [el("th", {scope: "col"}, extra)] : [])));
  }
  // The grid's one tab stop (roving tabindex): the box last focused.
  var boxes = [], cells = [], sums = [], boxRows = [], weightRows = [];
  var active = [0, 0];
  function moveIn(event) {
    var i = active[0], j = active[1], end = T - 1, ctrl = event.ctrlKey;
    var to = {ArrowLeft: [i, j - 1], ArrowRight: [i, j + 1], ArrowUp: [i - 1, j],
      ArrowDown: [i + 1, j], Home: ctrl ? [0, 0] : [i, 0],
      End: ctrl ? [end, end] : [i, end], PageUp: [0, j], PageDown: [end, j]
    }[event.key];
    if (!to || event.altKey || event.metaKey) { return; }
    event.preventDefault();  // an arrow at the edge stays, the page does not scroll
    var target = (boxes[to[0]] || [])[to[1]];
    if (target) { target.focus(); }
  }
  words.forEach(function (query, i) {
    boxes.push([]);
    cells.push([]);
    var boxRow = [el("th", {scope: "row", role: "rowheader"}, query)];
    var weightRow = [el("th", {scope: "row"}, query)];
    words.forEach(function (key, j) {
      var box = el("input", {type: "checkbox", tabindex: i || j ? -1 : 0,
        "aria-label": t("may", {query: query, key: key})});
      box.checked = mask[i][j];
      box.addEventListener("change", function () {
        mask[i][j] = box.checked;
        preset.value = "custom";
        update();
      });
      box.addEventListener("focus", function () {  // by the keyboard or the mouse
        boxes[active[0]][active[1]].tabIndex = -1;
        box.tabIndex = 0;
        active = [i, j];
      });
      boxes[i].push(box);
      boxRow.push(el("td", {"class": "qkv-x-box", role: "gridcell"}, box));
      cells[i].push(el("td"));
      weightRow.push(cells[i][j]);
    });
    sums.push(el("td"));
    weightRow.push(sums[i]);
    boxRows.push(el("tr", {role: "row"}, boxRow));
    weightRows.push(el("tr", {}, weightRow));
  });
  var grid = el("table", {role: "grid"}, [el("caption", {}, t("maskCaption")),
    header(null, true), el("tbody", {}, boxRows)]);
  grid.addEventListener("keydown", moveIn);
  live.appendChild(el("div", {"class": "qkv-x-grids"}, [grid,
    el("table", {}, [el("caption", {}, t("weightsCaption")), header(t("rowSum")),
      el("tbody", {}, weightRows)])]));
  var note = status(), overflow = live.appendChild(warning());

  function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }
  var lastReal = data.real_words;  // the last valid count, the one the mask uses
  function count() {  // the number of real words, null (and said) if not valid
    var n = parse(real.value, true);  // NaN when the box holds no number
    if (!(n >= 1 && n <= T && Math.floor(n) === n)) {
      real.setAttribute("aria-invalid", "true");
      realWarning.textContent = t("realInvalid", {max: T, used: lastReal});
      return null;
    }
    real.removeAttribute("aria-invalid");
    realWarning.textContent = "";
    lastReal = n;
    return n;
  }
  function apply() {
    var n = count();
    if (preset.value === "custom" || n === null) { return; }
    mask = pattern(preset.value, n);
    boxes.forEach(function (row, i) {
      row.forEach(function (box, j) { box.checked = mask[i][j]; });
    });
  }
  function update() {
    var weights = [], empty = [];
    words.forEach(function (query, i) {
      weights.push(softmax(scores[i], mask[i]));  // a row with no key: zeros, as qkv
      if (mask[i].indexOf(true) < 0) { empty.push(t("quoted", {word: query})); }
    });
    var top = maxOf(weights);
    weights.forEach(function (row, i) {
      row.forEach(function (w, j) {
        cells[i][j].textContent = fmt(w, dec);
        cells[i][j].className = mask[i][j] ? "" : "qkv-x-off";
        cells[i][j].style.backgroundColor = "";
        cells[i][j].style.color = "";
        if (mask[i][j]) { paint(cells[i][j], w, top); }
      });
      sums[i].textContent = fmt(row.reduce(function (a, b) { return a + b; }, 0), dec);
    });
    note.textContent = empty.length ? t("empty", {words: empty.join(", ")}) : "";
    overflow.textContent = finite(weights) ? "" : t("overflow");
    publish("weights", weights);
    publish("mask", mask);
  }
  preset.addEventListener("change", function () { apply(); update(); });
  real.addEventListener("input", function () { apply(); update(); });
  preset.value = "custom";
  data.presets.slice(1).forEach(function (name) {
    if (preset.value === "custom" && same(pattern(name, data.real_words), mask)) {
      preset.value = name;
    }
  });
  update();
}
