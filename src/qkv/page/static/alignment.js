// An explorable, the alignments (qkv.page.explorables.alignment_explorer, chapter
// cross-attention): pick a held-out sentence (a menu) and an English word of
// its translation (one tab stop, the arrow keys, Home/End: the WAI-ARIA radio
// group pattern); for each model, side by side, the weights its decoder puts on
// the French words while writing that word, the word with the most, and
// whether it is the one the reference alignment expects. The weights were
// computed by qkv when the page was built: the page only shows them.
// Built by qkvWidget (widget.js) with the tools of qkvExplorable (explorable.js).

/* exported qkvAlignmentExplorer */
/* global qkvExplorable */

function qkvAlignmentExplorer(root, data, live) {
  var {t, el, fmt, paint, publish, title, labelled} = qkvExplorable(root, data, live);
  var sentences = data.sentences, scores = data.scores, dec = data.decimals;
  var current = data.start, word = 0;
  title(t("title"));
  var select = el("select", {"class": "qkv-x-sentence"}, sentences.map(function (s, i) {
    return el("option", {value: i}, s.french.join(" "));
  }));
  select.value = String(current);
  var wordsLabel = el("span", {id: root.id + "-words"}, t("words"));
  var group = el("div", {"class": "qkv-x-words", role: "radiogroup",
    "aria-labelledby": wordsLabel.id});
  live.appendChild(el("div", {"class": "qkv-x-controls"}, [
    el("span", {"class": "qkv-x-pick"}, [labelled(select, t("sentence")), select])]));
  live.appendChild(el("div", {"class": "qkv-x-controls"}, [wordsLabel, group]));
  live.appendChild(el("p", {"class": "qkv-x-legend"}, t("hint")));
  var panels = el("div", {"class": "qkv-x-grids"});
  live.appendChild(panels);
  var said = scores.map(function () {
    return live.appendChild(el("p", {"class": "qkv-x-status", "aria-live": "polite"}));
  });
  var buttons = [];

  function pick(i, focus) {
    word = i;
    buttons.forEach(function (button, j) {
      button.setAttribute("aria-checked", j === i ? "true" : "false");
      button.tabIndex = j === i ? 0 : -1;
    });
    if (focus) { buttons[i].focus(); }
    show();
  }
  function words() {  // the English words of the sentence, as radio buttons
    var english = sentences[current].english;
    group.textContent = "";
    buttons = english.map(function (w, i) {
      var button = el("span", {role: "radio", "class": "qkv-x-word",
        "data-index": i}, w);
      button.addEventListener("click", function () { pick(i, true); });
      group.appendChild(button);
      return button;
    });
    pick(Math.min(word, english.length - 1), false);
  }
  group.addEventListener("keydown", function (event) {
    var end = buttons.length - 1;
    var to = {ArrowLeft: word - 1, ArrowUp: word - 1, ArrowRight: word + 1,
      ArrowDown: word + 1, Home: 0, End: end}[event.key];
    if (to === undefined || event.altKey || event.metaKey || event.ctrlKey) { return; }
    event.preventDefault();
    pick(Math.max(0, Math.min(end, to)), true);
  });

  function show() {
    var s = sentences[current], english = s.english[word];
    var expected = s.expected[word], shown = {};
    panels.textContent = "";
    scores.forEach(function (score, m) {
      var row = s.weights[score][word], model = t("model_" + score);
      var top = 0;
      row.forEach(function (w, j) { if (w > row[top]) { top = j; } });
      var body = s.french.map(function (french, j) {
        var cell = el("td", {"class": "qkv-x-weight"}, fmt(row[j], dec));
        paint(cell, row[j], 1);
        var bar = el("div", {"class": "qkv-x-bar" + (m ? " qkv-x-second" : "")});
        bar.style.width = (100 * Math.max(0, Math.min(1, row[j]))).toFixed(1) + "%";
        var name = el("th", {scope: "row"}, j === expected ?
          [french + " ", el("span", {"class": "qkv-x-expected"},
            "(" + t("expectedMark") + ")")] : french);
        return el("tr", {"class": j === top ? "qkv-x-current" : null},
          [name, cell, el("td", {"class": "qkv-x-barcell"}, bar)]);
      });
      panels.appendChild(el("table", {"class": "qkv-x-model", "data-score": score}, [
        el("caption", {}, t("caption", {model: model, word: english})),
        el("thead", {}, el("tr", {}, [el("th", {scope: "col"}, t("french")),
          el("th", {scope: "col", colspan: 2}, t("weight"))])),
        el("tbody", {}, body)]));
      var values = {model: model, top: s.french[top], weight: fmt(row[top], dec)};
      if (expected === null || expected === undefined) {
        said[m].textContent = t("topNoReference", values);
      } else {
        values.expected = s.french[expected];
        said[m].textContent = t(top === expected ? "topExpected" : "topOther", values);
      }
      shown[score] = row;
    });
    publish("weights", shown);
    publish("picked", [current, word]);
  }
  select.addEventListener("change", function () {
    current = Number(select.value);
    words();
  });
  words();
}
