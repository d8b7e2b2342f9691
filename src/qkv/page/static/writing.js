// An explorable, the model writes (qkv.page.explorables.write_live, chapter
// writing): the trained decoder's forward pass in plain JavaScript, from its
// weights in the data (float32, little-endian, base64), with a KV cache: one
// new token per step. Type a prompt, pick the temperature, the top-k and the
// seed, and watch it write; the next-token probabilities and the attention of
// one head from the last position follow each step.
// Built by qkvWidget (widget.js) with the tools of qkvExplorable
// (explorable.js) and the generator of qkvMulberry32 (seeded.js).

/* exported qkvWriteLive */
/* global qkvExplorable, qkvMulberry32 */

function qkvWriteLive(root, data, live) {
  var {t, el, fmt, num, parse, numberBox, paint, publish, title, labelled, status,
    warning} = qkvExplorable(root, data, live);
  var sz = data.sizes, V = sz.V, D = sz.D, H = sz.H, N = sz.N, E = D / H;
  var maxLen = sz.max_len, dec = data.decimals;

  // --- the weights: named Float32Arrays read from the base64 data -----------
  var bytes = atob(data.weights), view = new DataView(new ArrayBuffer(bytes.length));
  for (var b = 0; b < bytes.length; b++) { view.setUint8(b, bytes.charCodeAt(b)); }
  var W = {};
  data.tensors.forEach(function (entry) {
    var count = entry[1].reduce(function (a, c) { return a * c; }, 1);
    var values = new Float32Array(count);
    for (var i = 0; i < count; i++) {
      values[i] = view.getFloat32(4 * (entry[2] + i), true);
    }
    W[entry[0]] = values;
  });
  function param(name) {
    if (!W[name]) { throw new Error("qkvWriteLive: no weights named " + name); }
    return W[name];
  }
  var layers = [];
  for (var l = 0; l < N; l++) {
    var p = "blocks." + l + ".";
    layers.push({
      n1w: param(p + "norm1.weight"), n1b: param(p + "norm1.bias"),
      n2w: param(p + "norm2.weight"), n2b: param(p + "norm2.bias"),
      qw: param(p + "attention.W_q.weight"), qb: param(p + "attention.W_q.bias"),
      kw: param(p + "attention.W_k.weight"), kb: param(p + "attention.W_k.bias"),
      vw: param(p + "attention.W_v.weight"), vb: param(p + "attention.W_v.bias"),
      ow: param(p + "attention.W_o.weight"), ob: param(p + "attention.W_o.bias"),
      f1w: param(p + "feed_forward.linear1.weight"),
      f1b: param(p + "feed_forward.linear1.bias"),
      f2w: param(p + "feed_forward.linear2.weight"),
      f2b: param(p + "feed_forward.linear2.bias"),
      eps1: data.eps[l][0], eps2: data.eps[l][1],
    });
  }
  var embedding = param("token_embedding.weight");
  var normW = param("norm.weight"), normB = param("norm.bias"), normEps = data.eps[N][0];
  var unW = param("unembedding.weight"), unB = param("unembedding.bias");
  var F = sz.F;
  // RoPE: pair f (features 2f, 2f + 1) turns by p * base^(-2f / E), as qkv.rope
  var rates = [];
  for (var f = 0; f < E / 2; f++) {
    rates.push(Math.exp(-Math.log(data.base) * 2 * f / E));
  }

  // --- the forward pass, one token at a time --------------------------------
  function linear(w, bias, x, out) {  // out[o] = bias[o] + w[o, :] . x
    var n = x.length;
    for (var o = 0; o < out.length; o++) {
      var s = bias[o], row = o * n;
      for (var i = 0; i < n; i++) { s += w[row + i] * x[i]; }
      out[o] = s;
    }
    return out;
  }
  function layerNorm(x, w, bias, eps) {
    var mean = 0, v = 0, i, out = new Float64Array(x.length);
    for (i = 0; i < x.length; i++) { mean += x[i]; }
    mean /= x.length;
    for (i = 0; i < x.length; i++) { v += (x[i] - mean) * (x[i] - mean); }
    var inv = 1 / Math.sqrt(v / x.length + eps);
    for (i = 0; i < x.length; i++) { out[i] = (x[i] - mean) * inv * w[i] + bias[i]; }
    return out;
  }
  function rotate(x, start, position) {  // one head's slice of x, in place
    for (var f = 0; f < E / 2; f++) {
      var angle = position * rates[f], c = Math.cos(angle), s = Math.sin(angle);
      var a = x[start + 2 * f], b = x[start + 2 * f + 1];
      x[start + 2 * f] = a * c - b * s;
      x[start + 2 * f + 1] = a * s + b * c;
    }
  }
  // A KV cache: for each layer, the rotated keys and the values of each position.
  function newCache() {
    var cache = {keys: [], values: []};
    for (var l = 0; l < N; l++) { cache.keys.push([]); cache.values.push([]); }
    return cache;
  }
  // The logits (V) after the token ``id`` at the next position of ``cache``
  // (which it extends), and the attention weights of every layer and head from
  // that position: attention[l][h] over positions 0..p.
  function step(id, cache) {
    var position = cache.keys[0].length, x = new Float64Array(D), i;
    for (i = 0; i < D; i++) { x[i] = embedding[id * D + i]; }
    var attention = [], scale = 1 / Math.sqrt(E);
    layers.forEach(function (L, l) {
      var h = layerNorm(x, L.n1w, L.n1b, L.eps1);
      var q = linear(L.qw, L.qb, h, new Float64Array(D));
      var k = linear(L.kw, L.kb, h, new Float64Array(D));
      var v = linear(L.vw, L.vb, h, new Float64Array(D));
      var context = new Float64Array(D), heads = [];
      for (var hd = 0; hd < H; hd++) {
        rotate(q, hd * E, position);
        rotate(k, hd * E, position);
      }
      cache.keys[l].push(k);
      cache.values[l].push(v);
      var keys = cache.keys[l], values = cache.values[l];
      for (hd = 0; hd < H; hd++) {
        var start = hd * E, scores = [], best = -Infinity, total = 0;
        for (var j = 0; j < keys.length; j++) {
          var s = 0;
          for (i = 0; i < E; i++) { s += q[start + i] * keys[j][start + i]; }
          scores.push(s * scale);
          best = Math.max(best, s * scale);
        }
        var weights = scores.map(function (s) { return Math.exp(s - best); });
        weights.forEach(function (w) { total += w; });
        weights = weights.map(function (w) { return w / total; });
        for (j = 0; j < keys.length; j++) {
          for (i = 0; i < E; i++) { context[start + i] += weights[j] * values[j][start + i]; }
        }
        heads.push(weights);
      }
      attention.push(heads);
      var out = linear(L.ow, L.ob, context, new Float64Array(D));
      for (i = 0; i < D; i++) { x[i] += out[i]; }
      var hidden = linear(L.f1w, L.f1b, layerNorm(x, L.n2w, L.n2b, L.eps2),
        new Float64Array(F));
      for (i = 0; i < F; i++) { hidden[i] = Math.max(0, hidden[i]); }
      out = linear(L.f2w, L.f2b, hidden, new Float64Array(D));
      for (i = 0; i < D; i++) { x[i] += out[i]; }
    });
    var logits = linear(unW, unB, layerNorm(x, normW, normB, normEps),
      new Float64Array(V));
    return {logits: Array.from(logits), attention: attention};
  }

  // --- text and tokens -------------------------------------------------------
  var index = {};
  data.vocabulary.forEach(function (c, i) { index[c] = i; });
  function visible(c) { return data.visible[c] !== undefined ? data.visible[c] : c; }
  function tokenize(text) {  // ids of the known characters, and the others
    var ids = [], unknown = [];
    Array.from(text).forEach(function (c) {
      if (index[c] !== undefined) { ids.push(index[c]); }
      else if (unknown.indexOf(c) < 0) { unknown.push(c); }
    });
    return {ids: ids, unknown: unknown};
  }
  // The test hook: the page's logits (T, V) at every position of ``text``.
  root.qkvWriteLogits = function (text) {
    var cache = newCache();
    return tokenize(text).ids.slice(0, maxLen).map(function (id) {
      return step(id, cache).logits;
    });
  };

  // --- sampling: temperature (0: greedy), top-k, mulberry32 -----------------
  function softmax(values) {
    var best = Math.max.apply(null, values), total = 0;
    var out = values.map(function (v) { return v === -Infinity ? 0 : Math.exp(v - best); });
    out.forEach(function (v) { total += v; });
    return out.map(function (v) { return v / total; });
  }
  function argmax(values) {
    var best = 0;
    for (var i = 1; i < values.length; i++) { if (values[i] > values[best]) { best = i; } }
    return best;
  }
  // What the next token is drawn from, as qkv.experiments.writer.generate does.
  function sampling(logits, temperature, k) {
    if (temperature === 0) {
      var one = logits.map(function () { return 0; });
      one[argmax(logits)] = 1;
      return one;
    }
    var scaled = logits.map(function (v) { return v / temperature; });
    if (k < V) {
      var threshold = scaled.slice().sort(function (a, b) { return b - a; })[k - 1];
      scaled = scaled.map(function (v) { return v < threshold ? -Infinity : v; });
    }
    return softmax(scaled);
  }
  function draw(probabilities, uniform) {
    var total = 0, last = 0;
    for (var i = 0; i < probabilities.length; i++) {
      if (probabilities[i] > 0) {
        total += probabilities[i];
        last = i;
        if (uniform < total) { return i; }
      }
    }
    return last;
  }

  // --- the controls ------------------------------------------------------------
  title(t("title"));
  live.appendChild(el("p", {"class": "qkv-x-hint"}, t("keys")));
  var prompt = el("input", {type: "text", value: data.prompt, spellcheck: "false",
    autocomplete: "off", "class": "qkv-x-prompt"});
  var promptNote = warning(prompt);
  live.appendChild(el("div", {"class": "qkv-x-controls qkv-x-prompt-row"},
    [labelled(prompt, t("prompt")), prompt]));
  live.appendChild(promptNote);
  var temperature = numberBox(data.temperature, {step: 0.1, min: 0, max: 10});
  var topK = numberBox(data.top_k, {whole: true, min: 1, max: V});
  var seed = numberBox(data.seed, {whole: true, min: 0, max: 4294967295});
  var count = numberBox(data.count, {whole: true, min: 1, max: maxLen});
  var numbers = [temperature, topK, seed, count];
  var invalid = warning();
  numbers.forEach(function (box) {
    box.setAttribute("aria-describedby", invalid.id);
  });
  function options(n, chosen) {
    var out = [];
    for (var i = 0; i < n; i++) {
      // numbered from 0, as the rest of the book numbers layers and heads
      out.push(el("option", {value: i, selected: i === chosen}, String(i)));
    }
    return out;
  }
  var layer = el("select", {}, options(N, data.layer));
  var head = el("select", {}, options(H, data.head));
  live.appendChild(el("div", {"class": "qkv-x-controls"}, [
    el("span", {}, [labelled(temperature, t("temperature")), temperature]),
    el("span", {}, [labelled(topK, t("topK")), topK]),
    el("span", {}, [labelled(seed, t("seed")), seed]),
    el("span", {}, [labelled(count, t("count")), count])]));
  live.appendChild(invalid);
  var next = el("button", {type: "button"}, t("next"));
  var write = el("button", {type: "button"}, t("write", {count: data.count}));
  var stop = el("button", {type: "button"}, t("stop"));
  var reset = el("button", {type: "button"}, t("reset"));
  live.appendChild(el("div", {"class": "qkv-x-controls"}, [next, write, stop, reset,
    el("span", {}, [labelled(layer, t("layer")), layer]),
    el("span", {}, [labelled(head, t("head")), head])]));
  var said = status(), full = live.appendChild(warning());
  var textLabel = el("p", {"class": "qkv-x-caption", id: root.id + "-text"},
    t("text"));
  var textBox = el("div", {"class": "qkv-x-text", role: "textbox",
    "aria-readonly": "true", "aria-multiline": "true", tabindex: 0,
    "aria-labelledby": textLabel.id});
  live.appendChild(textLabel);
  live.appendChild(textBox);
  var caption = el("caption"), rows = [];
  for (var r = 0; r < data.shown; r++) {
    rows.push(el("tr", {}, [el("th", {scope: "row"}), el("td"), el("td")]));
  }
  var sampledHead = el("th", {scope: "col"});
  live.appendChild(el("div", {"class": "qkv-x-probs"}, el("table", {}, [caption,
    el("thead", {}, el("tr", {}, [el("th", {scope: "col"}, t("token")),
      el("th", {scope: "col"}, t("model")), sampledHead])),
    el("tbody", {}, rows)])));
  live.appendChild(el("p", {"class": "qkv-x-size"}, t("size", {params: data.params,
    bytes: data.weight_bytes, chars: data.weights.length})));

  // --- the state: the text's ids, its cache, the last step ------------------
  var state = {ids: [], promptLength: 0, cache: null, last: null, random: null,
    timer: null};
  var settings = {temperature: data.temperature, k: data.top_k, seed: data.seed,
    count: data.count};

  function readSettings() {  // the valid values; the last valid one otherwise
    var wrong = [];
    var checks = [
      [temperature, "temperature", function (v) { return v >= 0 && v <= 10; }],
      [topK, "k", function (v) { return v >= 1 && v <= V && v % 1 === 0; }],
      [seed, "seed", function (v) { return v >= 0 && v <= 4294967295 && v % 1 === 0; }],
      [count, "count", function (v) { return v >= 1 && v <= maxLen && v % 1 === 0; }],
    ];
    checks.forEach(function (check) {
      var value = parse(check[0].value, check[0] !== temperature);
      if (isFinite(value) && check[2](value)) {
        settings[check[1]] = value;
        check[0].removeAttribute("aria-invalid");
      } else {
        check[0].setAttribute("aria-invalid", "true");
        wrong.push(live.querySelector("label[for='" + check[0].id + "']").textContent);
      }
    });
    invalid.textContent = wrong.length ? t("invalid", {what: wrong.join(t("listSep"))}) : "";
    write.textContent = t("write", {count: settings.count});
  }

  function start() {  // the prompt read again: nothing written, the seed anew
    halt();
    var parsed = tokenize(prompt.value);
    promptNote.textContent = parsed.unknown.length ? t("skipped", {
      chars: parsed.unknown.map(function (c) { return t("quoted", {c: visible(c)}); })
        .join(t("listSep"))}) : "";
    var ids = parsed.ids.slice(0, maxLen), keep = 0;
    // the positions the text had already run keep their keys and values: a
    // character typed at the end of the prompt runs one step, not them all
    while (state.cache && keep < ids.length - 1 && keep < state.ids.length &&
      ids[keep] === state.ids[keep]) { keep += 1; }
    if (!state.cache) { state.cache = newCache(); }
    for (var l = 0; l < N; l++) {
      state.cache.keys[l].length = keep;
      state.cache.values[l].length = keep;
    }
    state.ids = ids;
    state.promptLength = ids.length;
    state.random = qkvMulberry32(settings.seed);
    state.last = null;
    ids.slice(keep).forEach(function (id) { state.last = step(id, state.cache); });
    show();
  }
  function canWrite() { return state.last !== null && state.ids.length < maxLen; }
  function once() {  // one token: drawn, appended, run through the cache
    if (!canWrite()) { return false; }
    var probabilities = sampling(state.last.logits, settings.temperature, settings.k);
    var id = settings.temperature === 0 ? argmax(state.last.logits) :
      draw(probabilities, state.random());
    state.ids.push(id);
    state.last = step(id, state.cache);
    return true;
  }
  function halt() {
    if (state.timer !== null) { clearTimeout(state.timer); state.timer = null; }
  }
  function writeMany() {
    halt();
    var left = settings.count;
    function tick() {
      if (left > 0 && once()) {
        left -= 1;
        show();
        state.timer = left > 0 && canWrite() ? setTimeout(tick, 40) : null;
      } else {
        state.timer = null;
      }
      if (state.timer === null) { halt(); show(); }
    }
    tick();
  }

  function show() {
    var ids = state.ids, last = state.last;
    while (textBox.firstChild) { textBox.removeChild(textBox.firstChild); }
    var weights = last ? last.attention[+layer.value][+head.value] : [];
    var top = weights.length ? Math.max.apply(null, weights) : 1;
    ids.forEach(function (id, i) {
      var c = data.vocabulary[id];
      var classes = (i >= state.promptLength ? "qkv-x-written " : "") +
        (i === ids.length - 1 ? "qkv-x-query" : "");
      var span = el("span", {"class": classes.trim() || null},
        c === "\n" ? "\u21b5" : c);
      paint(span, weights[i], top);
      textBox.appendChild(span);
      if (c === "\n") { textBox.appendChild(el("br")); }
    });
    var probabilities = last ? softmax(last.logits) : [];
    var drawn = last ? sampling(last.logits, settings.temperature, settings.k) : [];
    var order = probabilities.map(function (_, i) { return i; })
      .sort(function (a, b) { return probabilities[b] - probabilities[a] || a - b; });
    caption.textContent = last ? t("probsCaption", {shown: data.shown,
      last: visible(data.vocabulary[ids[ids.length - 1]])}) : "";
    sampledHead.textContent = t("sampled", {temperature: num(settings.temperature),
      k: settings.k});
    rows.forEach(function (row, r) {
      var cells = row.children, i = order[r];
      row.hidden = i === undefined;
      if (i === undefined) { return; }
      cells[0].textContent = visible(data.vocabulary[i]);
      [probabilities[i], drawn[i]].forEach(function (value, c) {
        var cell = cells[c + 1];
        cell.textContent = fmt(value, dec);
        cell.appendChild(el("div", {"class": "qkv-x-bar" + (c ? " qkv-x-second" : ""),
          style: "width:" + (100 * value).toFixed(1) + "%", "aria-hidden": "true"}));
      });
    });
    var used = ids.length;
    said.textContent = t("status", {written: used - state.promptLength, used: used,
      max: maxLen});
    full.textContent = used >= maxLen ? t("full", {max: maxLen}) :
      (used === 0 ? t("empty") : "");
    // aria-disabled, not disabled: a button that has the focus keeps it
    next.setAttribute("aria-disabled", String(!canWrite()));
    write.setAttribute("aria-disabled", String(!canWrite()));
    publish("tokens", ids);
    publish("probabilities", probabilities);
    publish("weights", weights);
  }

  // --- the keys and the buttons --------------------------------------------
  prompt.addEventListener("input", start);
  prompt.addEventListener("keydown", function (event) {
    if (event.key === "Enter") {
      event.preventDefault();
      if (once()) { show(); }
    }
  });
  numbers.forEach(function (box) {
    box.addEventListener("input", function () {
      var before = settings.seed;
      readSettings();
      if (settings.seed !== before) { start(); } else { show(); }
    });
  });
  layer.addEventListener("change", show);
  head.addEventListener("change", show);
  next.addEventListener("click", function () { halt(); if (once()) { show(); } });
  write.addEventListener("click", writeMany);
  stop.addEventListener("click", function () { halt(); show(); });
  reset.addEventListener("click", function () {
    prompt.value = data.prompt;
    start();
  });
  live.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && state.timer !== null) { halt(); show(); }
  });
  readSettings();
  start();
}
