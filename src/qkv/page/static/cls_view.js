// An explorable, what [CLS] looks at in a digit (qkv.page.explorables.cls_view,
// chapter attention-on-images): a slider through a set of held-out digits (the
// keys 0 to 9 jump to a class), a layer and a head (or their mean); the digit
// drawn with the weight of [CLS] on each patch, a table of the layer's weights
// and what the model reads. Every number was computed by qkv at build time; the
// page computes only the mean of the heads.
// Built by qkvWidget (widget.js) with the tools of qkvExplorable (explorable.js).

/* exported qkvClsView */
/* global qkvExplorable */

function qkvClsView(root, data, live) {
  var {t, el, fmt, paint, publish, title, labelled, status} =
    qkvExplorable(root, data, live);
  var B = data.classes.length, Ly = data.maps[0].length, H = data.maps[0][0].length;
  var M = data.maps[0][0][0].length, Hi = data.images[0].length;
  var Wi = data.images[0][0].length, P = data.patch_size, cols = Wi / P;
  var dec = data.decimals, NS = "http://www.w3.org/2000/svg", cell = 30;
  function svg(tag, attrs) {
    var node = document.createElementNS(NS, tag);
    for (var name in attrs) { node.setAttribute(name, attrs[name]); }
    return node;
  }
  function mean(values) {
    return values.reduce(function (a, b) { return a + b; }, 0) / values.length;
  }
  function colours(value) {  // the table's colours, for the figure
    var probe = document.createElement("span");
    paint(probe, value, 1);
    return [probe.style.backgroundColor, probe.style.color];
  }
  // weights(d, layer, head): the (M,) weights of a head, or of the mean (head H)
  function weights(d, layer, head) {
    var rows = data.maps[d][layer];
    if (head < H) { return rows[head].slice(); }
    var out = [];
    for (var m = 0; m < M; m++) {
      out.push(mean(rows.map(function (row) { return row[m]; })));
    }
    return out;
  }
  function selfWeight(d, layer, head) {
    var row = data.self[d][layer];
    return head < H ? row[head] : mean(row);
  }

  title(t("title"));
  var slider = el("input", {type: "range", min: 0, max: B - 1, step: 1,
    value: data.digit});
  var sliderLabel = labelled(slider, t("digit"));
  var shown = el("output", {"for": slider.id});
  var groupId = root.id + "-choice";
  function radios(name, legend, count, label, chosen) {
    var inputs = [], items = [];
    for (var i = 0; i < count; i++) {
      var input = el("input", {type: "radio", name: groupId + "-" + name, value: i,
        checked: i === chosen});
      inputs.push(input);
      items.push(el("label", {}, [input, " ", label(i)]));
    }
    return {inputs: inputs, node: el("fieldset", {}, [el("legend", {}, legend)]
      .concat(items))};
  }
  var layers = radios("layer", t("layer"), Ly, function (n) {
    return t("layerN", {n: n});
  }, data.layer);
  var heads = radios("head", t("head"), H + 1, function (n) {
    return n < H ? t("headN", {n: n}) : t("mean");
  }, data.head === null ? H : data.head);
  live.appendChild(el("div", {"class": "qkv-x-controls"}, [
    el("span", {}, [sliderLabel, slider, shown]), layers.node, heads.node]));
  live.appendChild(el("p", {"class": "qkv-x-legend qkv-x-keys"}, t("keys")));

  var size = {w: Wi * cell, h: Hi * cell};
  var plot = svg("svg", {viewBox: "0 0 " + size.w + " " + size.h, width: size.w,
    height: size.h, role: "img", "aria-label": t("figure"),
    style: "max-width:100%;height:auto"});
  var gradient = data.cmap.join(", ");
  var legend = el("p", {"class": "qkv-x-legend"}, [t("scale"),
    el("span", {"class": "qkv-x-swatch qkv-x-scale",
      style: "background: linear-gradient(to right, " + gradient + ")"}),
    t("scaleEnd")]);
  var corner = [el("th", {scope: "col"}, t("corner"))], head = [];
  for (var h = 0; h <= H; h++) {
    head.push(el("th", {scope: "col"}, h < H ? String(h) : t("meanShort")));
  }
  var cells = [], rows = [];
  for (var m = 0; m <= M; m++) {
    var row = [el("th", {scope: "row"}, m < M ? t("patch", {n: m}) : t("self"))];
    cells.push([]);
    for (h = 0; h <= H; h++) {
      cells[m].push(el("td"));
      row.push(cells[m][h]);
    }
    rows.push(el("tr", {}, row));
  }
  var caption = el("caption");
  var table = el("table", {}, [caption, el("thead", {}, el("tr", {},
    corner.concat(head))), el("tbody", {}, rows)]);
  live.appendChild(el("div", {"class": "qkv-x-grids"}, [
    el("figure", {"class": "qkv-x-digit"}, [plot, legend]), table]));
  var said = status();

  function draw(d, w) {
    while (plot.firstChild) { plot.removeChild(plot.firstChild); }
    var image = data.images[d];
    for (var r = 0; r < Hi; r++) {
      for (var c = 0; c < Wi; c++) {
        var patch = Math.floor(r / P) * cols + Math.floor(c / P);
        var paints = colours(w[patch]), ink = image[r][c];
        plot.appendChild(svg("rect", {x: c * cell, y: r * cell, width: cell,
          height: cell, fill: paints[0]}));
        if (ink > 0) {
          plot.appendChild(svg("circle", {cx: (c + 0.5) * cell, cy: (r + 0.5) * cell,
            r: 0.45 * cell * Math.sqrt(Math.min(1, ink)), fill: paints[1]}));
        }
      }
    }
    for (var p = 0; p < M; p++) {
      var x = (p % cols) * P * cell, y = Math.floor(p / cols) * P * cell;
      var group = svg("g", {"class": "qkv-x-patch", "data-patch": p});
      var tip = svg("title", {});
      tip.textContent = t("patchTitle", {n: p, row: Math.floor(p / cols),
        col: p % cols, weight: fmt(w[p], dec)});
      group.appendChild(tip);
      group.appendChild(svg("rect", {x: x, y: y, width: P * cell, height: P * cell,
        fill: "transparent", stroke: "var(--qkv-bg)", "stroke-width": 3}));
      if (P * cell >= 60) {  // room for the number in the patch's corner
        group.appendChild(svg("rect", {x: x + 3, y: y + 3, width: 12 + 8.5 * (dec + 2),
          height: 18, rx: 3, fill: "var(--qkv-bg)", "fill-opacity": 0.9}));
        var number = svg("text", {x: x + 7, y: y + 17, "class": "qkv-x-weight"});
        number.textContent = fmt(w[p], dec);
        group.appendChild(number);
      }
      plot.appendChild(group);
    }
  }
  function update() {
    var d = +slider.value, layer = 0, choice = H;
    layers.inputs.forEach(function (input, i) { if (input.checked) { layer = i; } });
    heads.inputs.forEach(function (input, i) { if (input.checked) { choice = i; } });
    var label = data.classes[d], pred = data.predictions[d];
    var value = t("digitValue", {n: d + 1, count: B, label: label});
    shown.textContent = value;
    slider.setAttribute("aria-valuetext", value);
    var probs = data.probabilities[d];
    said.textContent = t(pred === label ? "right" : "wrong", {label: label,
      pred: pred, prob: fmt(probs[pred], 3), trueProb: fmt(probs[label], 3)});
    caption.textContent = t("caption", {layer: layer});
    for (var h = 0; h <= H; h++) {
      var column = weights(d, layer, h).concat([selfWeight(d, layer, h)]);
      for (var m = 0; m <= M; m++) {
        cells[m][h].textContent = fmt(column[m], dec);
        paint(cells[m][h], column[m], 1);
        cells[m][h].classList.toggle("qkv-x-now", h === choice);
      }
    }
    var w = weights(d, layer, choice);
    draw(d, w);
    publish("weights", w);
    root.setAttribute("data-digit", d);
    root.setAttribute("data-layer", layer);
    root.setAttribute("data-head", choice < H ? choice : "mean");
  }
  slider.addEventListener("input", update);
  layers.inputs.concat(heads.inputs).forEach(function (input) {
    input.addEventListener("change", update);
  });
  // The keys 0 to 9, from anywhere in the figure: the next digit of that class.
  root.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.altKey || event.metaKey ||
        !/^[0-9]$/.test(event.key)) { return; }
    var wanted = +event.key, d = +slider.value;
    for (var step = 1; step <= B; step++) {
      var next = (d + step) % B;
      if (data.classes[next] === wanted) {
        slider.value = next;
        update();
        event.preventDefault();
        return;
      }
    }
  });
  update();
}
