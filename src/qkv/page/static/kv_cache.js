// An explorable, the KV cache of a decoder (qkv.page.explorables.kv_cache_calculator,
// chapter decoders): pick a published model or type your own D, H, H_kv and
// layers, the bytes per number, the context and the batch; the cache per token
// and for the context follows, with the model's key/value heads, as multi-head
// and as multi-query attention, in binary units as qkv.page.glue.human_bytes
// writes them. Sizes are BigInt (they may exceed the exact integers of a double).
// Built by qkvWidget (widget.js) with the tools of qkvExplorable (explorable.js).

/* exported qkvKVCache */
/* global qkvExplorable */

function qkvKVCache(root, data, live) {
  var {t, el, num, parse, numberBox, publish, title, labelled, status, warning} =
    qkvExplorable(root, data, live);
  var lang = (data.lang || (root.closest("[lang]") || document.documentElement)
    .getAttribute("lang") || "en").slice(0, 2).toLowerCase();
  var french = lang === "fr", limits = data.limits;
  // qkv.page.numbers.byte_units: B, KiB, MiB... (French o, Kio, Mio...)
  var units = data.units[lang] || data.units.en;
  var configs = {};
  data.configs.forEach(function (row) { configs[row[0]] = row.slice(1); });

  // A whole number with its thousands grouped as Python's "{:,}" writes it,
  // then as qkv.language.localise does in French (a narrow no-break space).
  function group(digits) {
    return digits.replace(/\B(?=(\d{3})+(?!\d))/g, french ? "\u202f" : ",");
  }
  // qkv.page.glue.human_bytes: the bytes as a double first (Python's float()),
  // then exact arithmetic, halves rounded up, binary units up to PiB.
  function humanBytes(bytes) {
    var n = BigInt(Number(bytes));
    if (n < 1024n) { return group(n.toString()) + " " + units[0]; }
    var d = 1n;
    for (var i = 1; i < units.length; i++) {
      d *= 1024n;
      var tenths = (20n * n + d) / (2n * d);  // n / d to tenths, halves up
      if (tenths < 10240n || i === units.length - 1) {
        return group((tenths / 10n).toString()) + (french ? "," : ".") +
          (tenths % 10n).toString() + " " + units[i];
      }
    }
  }
  // qkv.cost.kv_cache_bytes: a key and a value of size kv_dim per token and layer
  function cacheBytes(tokens, layers, kvDim, bytes) {
    return 2n * tokens * layers * kvDim * bytes;
  }

  title(t("title"));
  live.appendChild(el("p", {"class": "qkv-x-legend"}, t("hint")));
  var own = "\u0000own";  // the value of "your own numbers" (no model's name)
  var model = el("select", {}, data.configs.map(function (row) {
    return el("option", {value: row[0]}, row[0]);
  }).concat([el("option", {value: own}, t("own"))]));
  model.value = data.model;
  var fields = {}, names = {dim: "dim", heads: "heads", kv_heads: "kvHeads",
    layers: "layers"};
  var configParts = [];
  Object.keys(names).forEach(function (key, i) {
    var input = numberBox(configs[data.model][i], {whole: true, min: 1,
      max: limits[key]});
    fields[key] = input;
    configParts.push(el("span", {}, [labelled(input, t(names[key])), input]));
  });
  var bytes = el("select", {}, [4, 2, 1].map(function (b) {
    return el("option", {value: b}, t("bits" + 8 * b));
  }));
  bytes.value = String(data.bytes_per_number);
  var tokens = numberBox(data.n_tokens, {whole: true, min: 1, max: limits.n_tokens,
    "class": "qkv-x-wide"});
  var slider = el("input", {type: "range", min: 0, step: 1,
    max: Math.floor(Math.log2(limits.n_tokens)),
    value: Math.floor(Math.log2(data.n_tokens))});
  var batch = numberBox(data.batch, {whole: true, min: 1, max: limits.batch});
  fields.n_tokens = tokens;
  fields.batch = batch;
  live.appendChild(el("div", {"class": "qkv-x-controls"},
    [el("span", {}, [labelled(model, t("model")), model])].concat(configParts)));
  live.appendChild(el("div", {"class": "qkv-x-controls"}, [
    el("span", {}, [labelled(bytes, t("bytes")), bytes]),
    el("span", {}, [labelled(tokens, t("tokens")), tokens]),
    el("span", {}, [labelled(slider, t("tokensSlider")), slider]),
    el("span", {}, [labelled(batch, t("batch")), batch])]));
  var note = live.appendChild(warning());
  Object.keys(fields).forEach(function (key) {
    fields[key].setAttribute("aria-describedby", note.id);
  });

  var kinds = ["model", "mha", "mqa"], cells = {};
  var caption = el("caption");
  var body = kinds.map(function (kind) {
    cells[kind] = {name: el("th", {scope: "row"}), kv: el("td"), per: el("td"),
      total: el("td"), ratio: el("td"), bar: el("div", {"class": "qkv-x-bar"})};
    var c = cells[kind];
    return el("tr", {"data-kind": kind}, [c.name, c.kv, c.per, c.total, c.ratio,
      el("td", {"class": "qkv-x-kv-glance", "aria-hidden": "true"}, c.bar)]);
  });
  live.appendChild(el("table", {"class": "qkv-x-kv-table"}, [caption,
    el("thead", {}, el("tr", {}, ["kind", "kvCount", "perToken", "total", "ratio",
      "sizes"].map(function (key) { return el("th", {scope: "col"}, t(key)); }))),
    el("tbody", {}, body)]));
  var said = status();

  // The value of a box: a whole number from 1 to its limit, or null.
  function read(key) {
    var value = parse(fields[key].value, true);
    var ok = Number.isInteger(value) && value >= 1 && value <= limits[key];
    if (ok) {
      fields[key].removeAttribute("aria-invalid");
    } else {
      fields[key].setAttribute("aria-invalid", "true");
    }
    return ok ? value : null;
  }
  function clear() {
    kinds.forEach(function (kind) {
      ["kv", "per", "total", "ratio"].forEach(function (part) {
        cells[kind][part].textContent = "\u2014";
      });
      cells[kind].bar.style.width = "0";
    });
    said.textContent = "";
    publish("sizes", null);
  }
  function update() {
    var values = {}, bad = null;
    Object.keys(fields).forEach(function (key) {
      values[key] = read(key);
      if (values[key] === null && bad === null) { bad = key; }
    });
    var name = model.value === own ? t("yourModel") : model.value;
    caption.textContent = t("caption", {name: name,
      tokens: values.n_tokens === null ? "\u2014" : group(String(values.n_tokens)),
      batch: values.batch === null ? "\u2014" : group(String(values.batch))});
    if (bad !== null) {
      var label = bad in names ? t(names[bad]) :
        t(bad === "n_tokens" ? "tokens" : "batch");
      note.textContent = t("notInt", {name: label, max: group(String(limits[bad]))});
      clear();
      return;
    }
    if (values.dim % values.heads || values.heads % values.kv_heads) {
      fields.heads.setAttribute("aria-invalid", "true");
      fields.kv_heads.setAttribute("aria-invalid", "true");
      note.textContent = t("notDivide", {dim: num(values.dim),
        heads: num(values.heads), kv: num(values.kv_heads)});
      clear();
      return;
    }
    note.textContent = "";
    var headDim = BigInt(values.dim / values.heads), b = BigInt(bytes.value);
    var count = BigInt(values.n_tokens) * BigInt(values.batch);
    var layers = BigInt(values.layers);
    var kvOf = {model: values.kv_heads, mha: values.heads, mqa: 1}, sizes = {};
    kinds.forEach(function (kind) {
      var kvDim = BigInt(kvOf[kind]) * headDim;
      sizes[kind] = [cacheBytes(1n, layers, kvDim, b),
        cacheBytes(count, layers, kvDim, b)];
    });
    var largest = Number(sizes.mha[1]);
    kinds.forEach(function (kind) {
      var c = cells[kind];
      c.name.textContent = t(kind + "_row", {kv: num(kvOf[kind])});
      c.kv.textContent = num(kvOf[kind]);
      c.per.textContent = humanBytes(sizes[kind][0]);
      c.total.textContent = humanBytes(sizes[kind][1]);
      c.ratio.textContent = num(values.heads / kvOf[kind]);
      var share = largest > 0 ? Number(sizes[kind][1]) / largest : 0;
      c.bar.style.width = Math.max(0.5, 100 * share) + "%";
    });
    said.textContent = t("status", {name: name, total: humanBytes(sizes.model[1]),
      tokens: group(String(values.n_tokens)), batch: group(String(values.batch)),
      per: humanBytes(sizes.model[0]), ratio: num(values.heads / values.kv_heads)});
    var shown = {};
    kinds.forEach(function (kind) {
      shown[kind] = [sizes[kind][0].toString(), sizes[kind][1].toString()];
    });
    publish("sizes", shown);
    root.setAttribute("data-model", model.value === own ? "" : model.value);
  }
  model.addEventListener("change", function () {
    if (model.value !== own) {
      Object.keys(names).forEach(function (key, i) {
        fields[key].value = num(configs[model.value][i]);
      });
    }
    update();
  });
  Object.keys(names).forEach(function (key) {
    fields[key].addEventListener("input", function () {
      model.value = own;  // a number typed: the reader's own model
      update();
    });
  });
  bytes.addEventListener("change", update);
  batch.addEventListener("input", update);
  tokens.addEventListener("input", function () {
    var value = parse(tokens.value, true);
    if (Number.isInteger(value) && value >= 1) {
      slider.value = Math.min(+slider.max, Math.floor(Math.log2(value)));
    }
    update();
  });
  slider.addEventListener("input", function () {
    tokens.value = num(Math.pow(2, +slider.value));
    update();
  });
  function sliderText() {
    slider.setAttribute("aria-valuetext", group(String(Math.pow(2, +slider.value))));
  }
  slider.addEventListener("input", sliderText);
  tokens.addEventListener("input", sliderText);
  sliderText();
  update();
}
