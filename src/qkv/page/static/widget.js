// The frame of every widget of qkv.page.widgets. Each widget's own script ends
// with qkvWidget(document.getElementById("<its root's id>"), build): it runs
// once per root, reads the widget's data (JSON in .qkv-w-data), lets
// build(root, data, live) make the interactive part, and only shows that part,
// and hides the static figure, if build ran to the end.

/* exported qkvWidget, qkvIsolate */

// A reader's word put into a sentence: isolated (U+2068 ... U+2069) when it
// holds right-to-left letters (Hebrew, Arabic, Syriac, Thaana, NKo... their
// presentation forms, the astral right-to-left blocks) or a bidi control, so
// that it cannot reorder the sentence around it; other text as it is. As
// qkv.page.widgets.isolated does in Python.
var QKV_BIDI = /[\u0590-\u08ff\u200f\u202a-\u202e\u2066-\u2069\ufb1d-\ufdff\ufe70-\ufefc]|\ud802[\udc00-\udfff]|\ud803[\udc00-\udfff]|\ud83a[\udc00-\udfff]|\ud83b[\udc00-\udeff]/;

function qkvIsolate(value) {
  var text = String(value);
  return QKV_BIDI.test(text) ? "\u2068" + text + "\u2069" : text;
}

function qkvWidget(root, build) {
  if (!root || root.getAttribute("data-ready")) { return; }
  root.setAttribute("data-ready", "1");
  var data = JSON.parse(root.querySelector(".qkv-w-data").textContent);
  var live = root.querySelector(".qkv-w-live");
  build(root, data, live);
  live.hidden = false;
  root.classList.add("qkv-w-ready");
}
