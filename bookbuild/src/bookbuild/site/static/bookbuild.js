// The book's own script, added to every page by bookbuild.site.style.
//
// Keyboard access to content that scrolls sideways, also in boxes opened later.
// The theme gives a wide code block or output a tab stop (tabindex 0) so that a
// keyboard can scroll it, but only for what is visible when the page loads, or
// after a resize: a solution or folded code opened later kept tabindex -1 while
// it scrolled (axe-core: "scrollable-region-focusable"). The same rule, with the
// theme's own list of elements, runs again whenever a box is opened or closed.
(() => {
  const SCROLLABLE = [
    "pre",
    ".nboutput > .output_area",
    ".cell_output > .output",
    ".jp-RenderedHTMLCommon",
    ".pst-scrollable-table-container",
  ].join(", ");

  function updateTabStops() {
    document.querySelectorAll(SCROLLABLE).forEach((element) => {
      const scrolls =
        element.scrollWidth > element.clientWidth ||
        element.scrollHeight > element.clientHeight;
      element.tabIndex = scrolls ? 0 : -1;
    });
  }

  let pending = null;
  function soon() {
    clearTimeout(pending);
    pending = setTimeout(updateTabStops, 50);
  }

  // <details> boxes (folded code, "Cite this chapter"): "toggle" does not bubble.
  document.addEventListener("toggle", soon, true);
  // sphinx-togglebutton's boxes (solutions) open on a click of their title.
  document.addEventListener("click", (event) => {
    if (event.target.closest(".toggle-button, .admonition-title, summary")) {
      soon();
    }
  });
})();
