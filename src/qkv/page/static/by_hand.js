// An explorable, attention by hand (qkv.page.explorables.attention_by_hand, chapter
// attention-by-hand): pick the query word, edit the word vectors; scores, weights
// (divided by the sum and softmax) and the context vector follow.
// Built by qkvWidget (widget.js) with the tools of qkvExplorable (explorable.js).

/* exported qkvAttentionByHand */
/* global qkvExplorable */

function qkvAttentionByHand(root, data, live) {
  var {t, el, fmt, parse, numberBox, finite, softmax, publish, title, labelled, status,
    warning} = qkvExplorable(root, data, live);
  var words = data.words, x = data.x, T = words.length, D = x[0].length;
  var dec = data.decimals, invalid = {};
  title(t("title"));
  var select = el("select", {}, words.map(function (w, i) {
    return el("option", {value: i}, w);
  }));
  select.value = String(data.query);
  live.appendChild(el("div", {"class": "qkv-x-controls"},
    [labelled(select, t("query")), select]));
  var caption = el("caption"), rows = [], out = [];
  words.forEach(function (word, j) {
    var cells = [el("th", {scope: "row"}, word)];
    x[j].forEach(function (value, k) {
      var input = numberBox(value, {step: data.step,
        label: t("coordinate", {word: word, k: k + 1})});
      input.addEventListener("input", function () {
        var typed = parse(input.value);  // NaN when the box holds no number
        if (isFinite(typed)) {
          x[j][k] = typed;
          input.removeAttribute("aria-invalid");
          delete invalid[j + "," + k];
        } else {
          input.setAttribute("aria-invalid", "true");
          invalid[j + "," + k] = true;
        }
        update();
      });
      input.addEventListener("change", announce);
      cells.push(el("td", {}, input));
    });
    var row = {score: el("td"), bySum: el("td"), soft: el("td")};
    out.push(row);
    rows.push(el("tr", {}, cells.concat([row.score, row.bySum, row.soft])));
  });
  var sums = {score: el("td"), bySum: el("td"), soft: el("td")};
  live.appendChild(el("table", {}, [caption,
    el("thead", {}, el("tr", {}, [
      el("th", {scope: "col"}, t("word")),
      el("th", {scope: "col", colspan: D}, t("vector")),
      el("th", {scope: "col"}, t("score")),
      el("th", {scope: "col"}, t("bySum")),
      el("th", {scope: "col"}, t("softmax"))])),
    el("tbody", {}, rows),
    el("tfoot", {}, el("tr", {}, [el("th", {scope: "row", colspan: 1 + D}, t("sum")),
      sums.score, sums.bySum, sums.soft]))]));
  var context = live.appendChild(el("p"));
  var note = live.appendChild(warning());  // overflow, a sum of 0, a box not valid
  live.querySelectorAll("input.qkv-x-number").forEach(function (box) {
    box.setAttribute("aria-describedby", note.id);
  });
  var said = status(), weights = [];

  function show(cell, value, second, top) {
    cell.textContent = fmt(value, dec);
    var share = value / top;  // NaN or infinite after an overflow: no bar
    var width = isFinite(share) ? Math.min(1, Math.max(0, share)) * 100 : 0;
    cell.appendChild(el("div", {"class": "qkv-x-bar" + (second ? " qkv-x-second" : ""),
      style: "width:" + width.toFixed(1) + "%", "aria-hidden": "true"}));
  }
  function update() {
    var q = +select.value, scores = [], total = 0, z = [], j, k;
    for (j = 0; j < T; j++) {
      var s = 0;
      for (k = 0; k < D; k++) { s += x[q][k] * x[j][k]; }
      scores.push(s);
      total += s;
    }
    var bySum = scores.map(function (s) { return s / total; });
    weights = softmax(scores);
    for (k = 0; k < D; k++) {
      var c = 0;
      for (j = 0; j < T; j++) { c += weights[j] * x[j][k]; }
      z.push(c);
    }
    var broken = total === 0, outside = false;
    var top = Math.max.apply(null, weights.concat(broken ? [] : bySum));
    for (j = 0; j < T; j++) {
      out[j].score.textContent = fmt(scores[j], dec);
      show(out[j].bySum, broken ? NaN : bySum[j], false, top);
      show(out[j].soft, weights[j], true, top);
      outside = outside || (!broken && (bySum[j] < 0 || bySum[j] > 1));
      rows[j].className = j === q ? "qkv-x-current" : "";
    }
    var add = function (a, b) { return a + b; };
    sums.score.textContent = fmt(total, dec);
    sums.bySum.textContent = broken ? fmt(NaN, dec) : fmt(bySum.reduce(add, 0), dec);
    sums.soft.textContent = fmt(weights.reduce(add, 0), dec);
    caption.textContent = t("caption", {word: words[q]});
    context.textContent = t("context", {word: words[q]}) + "(" +
      z.map(function (v) { return fmt(v, dec); }).join(t("listSep")) + ")";
    var overflow = !finite([scores, total, weights, z]);
    note.textContent = [overflow ? t("overflow") : "",
      overflow ? "" : broken ? t("sumZero") : outside ? t("sumBroken") : "",
      Object.keys(invalid).length ? t("invalid") : ""]
      .filter(Boolean).join(" ");
    publish("weights", weights);
    publish("weights-by-sum", broken ? null : bySum);
    publish("scores", scores);
    publish("context", z);
    root.setAttribute("data-query", q);
  }
  function announce() {
    var best = 0;
    weights.forEach(function (w, j) { if (w > weights[best]) { best = j; } });
    said.textContent = t("status", {word: words[+select.value],
      weight: fmt(weights[best], dec), best: words[best]});
  }
  select.addEventListener("change", function () { update(); announce(); });
  update();
}
