// What the scripts of the explorables (qkv.page.explorables) share:
// qkvExplorable(root, data, live) gives the tools an explorable builds with:
// labels in the page's language (t), element building (el, labelled, title,
// status), numbers as the page's language writes them (fmt: Python's rounding;
// num: a number as it is; both with a decimal comma on a French page, as the
// head view writes them; parse: a number the reader types, either way; numberBox:
// a box for one), softmax, viridis colours (paint), publish, which
// writes a value as JSON into a data- attribute of the root, and warnings: a
// live region (warning) for a value the page cannot compute (finite checks it).

/* exported qkvExplorable */
/* global qkvIsolate */

function qkvExplorable(root, data, live) {
  var lang = (data.lang || (root.closest("[lang]") || document.documentElement)
    .getAttribute("lang") || "en").slice(0, 2).toLowerCase();
  var labels = data.labels[lang] || data.labels.en;
  var comma = lang === "fr";  // the languages that write 0,5 for 0.5
  function t(key, values) {
    var text = labels[key] !== undefined ? labels[key] : data.labels.en[key];
    for (var name in values || {}) {
      // A value that holds right-to-left text or a bidi control is isolated
      // (U+2068 ... U+2069): it cannot reorder the sentence around it.
      text = text.split("{" + name + "}").join(qkvIsolate(values[name]));
    }
    return text;
  }
  var serial = 0;
  function newId() { serial += 1; return root.id + "-" + serial; }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    for (var name in attrs || {}) {
      var value = attrs[name];
      if (value === null || value === undefined || value === false) { continue; }
      node.setAttribute(name, value === true ? "" : String(value));
    }
    [].concat(children === undefined ? [] : children).forEach(function (child) {
      node.appendChild(typeof child === "object" ? child :
        document.createTextNode(String(child)));
    });
    return node;
  }
  function decimal(text) { return comma ? text.replace(".", ",") : text; }
  function fmt(value, decimals) {
    if (!isFinite(value)) { return "\u2014"; }
    var power = Math.pow(10, decimals), scaled = Math.abs(value) * power;
    var floor = Math.floor(scaled);
    if (scaled - floor === 0.5 && floor % 2 === 0) {
      // an exact tie: to even, as Python's format (the page) rounds it
      return decimal((value < 0 ? "-" : "") + (floor / power).toFixed(decimals));
    }
    return decimal(value.toFixed(decimals));
  }
  function num(value) { return decimal(String(value)); }
  // A number the reader types, read the way the page's language writes it and
  // the other way too: "0,9" and "0.9" alike, a minus sign (- or \u2212), a
  // power of ten ("1e200"), digits grouped by threes with a space (either
  // language) or, on an English page, a comma ("4 096", "4,096"). NaN for what
  // is not a number, and for what could be two numbers: "1,500" on an English
  // page in a box for decimals (one and a half, or fifteen hundred?). Never
  // another number.
  function parse(text, whole) {
    var s = String(text).trim().replace(/\u2212/g, "-"), sign = 1;
    if (/^[-+]/.test(s)) {
      sign = s[0] === "-" ? -1 : 1;
      s = s.slice(1);
    }
    if (/^\d{1,3}([ \u00a0\u202f]\d{3})+([.,]\d+)?$/.test(s)) {
      s = s.replace(/[ \u00a0\u202f]/g, "");
    } else if (!comma && /^[1-9]\d{0,2}(,\d{3})+(\.\d+)?$/.test(s)) {
      if (!whole && s.indexOf(".") < 0) { return NaN; }  // "1,500": which one?
      s = s.replace(/,/g, "");
    }
    if (!/^(\d+([.,]\d*)?|[.,]\d+)([eE][-+]?\d+)?$/.test(s)) { return NaN; }
    return sign * Number(s.replace(",", "."));
  }
  // A box for a number (not <input type=number>, which reads a French "0,9"
  // as 9 in Chromium): its value shown as the page writes numbers, read by
  // parse; the arrow keys add or take off ``step`` within [min, max], as a
  // number box does, and say it as an input event.
  function numberBox(value, options) {
    var o = options || {};
    var box = el("input", {type: "text", inputmode: o.whole ? "numeric" : "decimal",
      autocomplete: "off", spellcheck: "false", value: num(value),
      "class": "qkv-x-number" + (o["class"] ? " " + o["class"] : ""),
      "aria-label": o.label});
    var step = o.step || 1;
    var places = (String(step).split(".")[1] || "").length;
    box.addEventListener("keydown", function (event) {
      var delta = {ArrowUp: step, ArrowDown: -step}[event.key];
      var now = parse(box.value, o.whole);
      if (delta === undefined || !isFinite(now)) { return; }
      event.preventDefault();
      var next = Number((now + delta).toFixed(places));
      if (o.min !== undefined) { next = Math.max(o.min, next); }
      if (o.max !== undefined) { next = Math.min(o.max, next); }
      box.value = num(next);
      box.dispatchEvent(new Event("input", {bubbles: true}));
    });
    return box;
  }
  function finite(values) {  // are all the numbers of (nested) arrays finite?
    return [].concat(values).every(function (v) {
      return Array.isArray(v) ? finite(v) : isFinite(v);
    });
  }
  function softmax(row, allowed) {
    var best = -Infinity, out = [], total = 0, i;
    for (i = 0; i < row.length; i++) {
      if (!allowed || allowed[i]) { best = Math.max(best, row[i]); }
    }
    if (best === -Infinity) { return row.map(function () { return 0; }); }
    for (i = 0; i < row.length; i++) {
      out.push(!allowed || allowed[i] ? Math.exp(row[i] - best) : 0);
      total += out[i];
    }
    return out.map(function (v) { return v / total; });
  }
  var stops = data.cmap.map(function (hex) {
    return [1, 3, 5].map(function (at) { return parseInt(hex.slice(at, at + 2), 16); });
  });
  function paint(cell, value, top) {
    var share = value / top;  // an overflow (NaN, infinite): the first colour
    share = isFinite(share) && top > 0 ? share : 0;
    var x = Math.min(1, Math.max(0, share)) * (stops.length - 1);
    var i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
    var rgb = [0, 1, 2].map(function (c) {
      return Math.round(stops[i][c] + f * (stops[i + 1][c] - stops[i][c]));
    });
    var lum = rgb.map(function (c) {
      c /= 255;
      return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    });
    lum = 0.2126 * lum[0] + 0.7152 * lum[1] + 0.0722 * lum[2];
    cell.style.backgroundColor = "rgb(" + rgb.join(",") + ")";
    cell.style.color = (lum + 0.05) / 0.05 > 1.05 / (lum + 0.05) ? "#000" : "#fff";
  }
  function publish(name, value) {
    root.setAttribute("data-" + name, JSON.stringify(value));
  }
  function title(text) {
    var node = el("p", {"class": "qkv-x-title", id: newId()}, text);
    live.setAttribute("role", "group");
    live.setAttribute("aria-labelledby", node.id);
    live.appendChild(node);
  }
  function labelled(control, text) {
    control.id = newId();
    return el("label", {"for": control.id}, text);
  }
  function status() {
    return live.appendChild(el("p", {"class": "qkv-x-status", "aria-live": "polite"}));
  }
  // A warning next to ``control`` (an overflow, a value that is not valid): a
  // live region, read out when its text changes and empty when all is well;
  // the control names it as its description.
  function warning(control) {
    var node = el("p", {"class": "qkv-x-note", role: "status", "aria-live": "polite",
      id: newId()});
    if (control) {
      control.setAttribute("aria-describedby", node.id);
    }
    return node;
  }
  function maxOf(rows) {
    return Math.max.apply(null, [].concat.apply([], rows));
  }
  return {
    t: t, el: el, fmt: fmt, num: num, parse: parse, numberBox: numberBox,
    finite: finite, softmax: softmax, paint: paint,
    publish: publish, title: title, labelled: labelled, status: status,
    warning: warning, maxOf: maxOf,
  };
}
