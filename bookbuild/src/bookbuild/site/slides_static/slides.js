// The lecture decks of bookbuild.site.slides: reveal.js at 1280x720, its
// speaker notes, the light or dark mode of the site (key M switches), and the
// labels of its controls and of its pause overlay in the deck's language (read
// from this script's data-; the speaker view's: bookbuild.site.slides).
/* global Reveal, RevealNotes */
(function () {
  "use strict";
  const script = document.currentScript;
  const label = (name) => script.getAttribute("data-label-" + name) || "";
  const root = document.documentElement;
  // data-theme: the mode resolved by the deck's first script (in its <head>)
  const switchMode = () => {
    root.dataset.mode = root.dataset.theme === "dark" ? "light" : "dark";
    root.dataset.theme = root.dataset.mode;
    try {
      localStorage.setItem("mode", root.dataset.mode);
    } catch {
      // storage refused (a file: URL in some browsers): the mode still switches
    }
  };
  Reveal.initialize({
    width: 1280,
    height: 720,
    margin: 0.02,
    center: false,
    hash: true,
    slideNumber: "c/t",
    transition: "none",
    help: false,
    pdfMaxPagesPerSlide: 1,
    pdfSeparateFragments: false,
    plugins: [RevealNotes],
  }).then(() => {
    Reveal.addKeyBinding(
      { keyCode: 77, key: "M", description: label("mode") },
      switchMode,
    );
    const names = {
      prev: "previous",
      left: "previous",
      next: "next",
      right: "next",
      up: "up",
      down: "down",
    };
    document.querySelectorAll(".reveal .controls button").forEach((button) => {
      const side = [...button.classList]
        .map((name) => name.replace("navigate-", ""))
        .find((name) => name in names);
      if (side) button.setAttribute("aria-label", label(names[side]));
    });
    // The pause overlay's button (keys B and .), in the deck's language.
    const resume = document.querySelector(".reveal .pause-overlay .resume-button");
    if (resume) resume.textContent = label("resume");
  });
})();
