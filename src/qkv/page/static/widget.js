// The frame of every widget of qkv.page.widgets. Each widget's own script ends
// with qkvWidget(document.getElementById("<its root's id>"), build): it runs
// once per root, reads the widget's data (JSON in .qkv-w-data), lets
// build(root, data, live) make the interactive part, and only shows that part,
// and hides the static figure, if build ran to the end.

/* exported qkvWidget */

function qkvWidget(root, build) {
  if (!root || root.getAttribute("data-ready")) { return; }
  root.setAttribute("data-ready", "1");
  var data = JSON.parse(root.querySelector(".qkv-w-data").textContent);
  var live = root.querySelector(".qkv-w-live");
  build(root, data, live);
  live.hidden = false;
  root.classList.add("qkv-w-ready");
}
