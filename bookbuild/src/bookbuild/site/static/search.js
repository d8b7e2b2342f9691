// The search page's query without accents, added to that page alone by
// bookbuild.site.search_index (read its docstring first).
//
// The index's words were stemmed without their accents, and its index entries
// written without them (search_index.fold: NFD, combining marks removed, and
// a typographic apostrophe as a keyboard's). Here the query is folded the same
// way before Sphinx's own search (searchtools.js, Sphinx 7.4) compares it, so
// that "requete", "tete" and "attention croisee" find what "requête", "tête"
// and "attention croisée" find, in the same order:
// - each word of the query, before the language's stemmer stems it, and
//   before it is compared with the stop words ("dès" is "des", one of them);
// - the text Sphinx compares by lower-casing it (the query against the
//   section titles and the index entries, object names, the text around a
//   match in a summary): while its search runs, lower-casing also folds.
//   Titles cannot be folded in the index: Sphinx shows them as they are
//   written there.
// Deferred: runs once the page is parsed, so after searchtools.js,
// language_data.js and searchindex.js (plain scripts of the page), and before
// Sphinx runs the query of the address (on DOMContentLoaded).
/* global Search */
(() => {
  if (typeof Search === "undefined" || typeof Stemmer === "undefined") return;

  const fold = (text) =>
    text.replace(/[\u2018\u2019]/g, "'").normalize("NFD").replace(/\p{M}/gu, "");

  const stopped = new Set(window.stopwords.map(fold));
  window.stopwords = Object.assign([...window.stopwords], {
    indexOf: (word) => (stopped.has(fold(word)) ? 0 : -1),
  });

  const LanguageStemmer = window.Stemmer;
  window.Stemmer = function FoldingStemmer() {
    const stemmer = new LanguageStemmer();
    this.stemWord = (word) => stemmer.stemWord(fold(word));
  };

  // Sphinx's function, run with a lower-casing that also folds (restored after:
  // the search is synchronous, nothing else runs in between).
  const toLowerCase = String.prototype.toLowerCase;
  function foldingLowerCase() {
    return fold(toLowerCase.call(this));
  }
  const accentBlind = (run) =>
    function (...args) {
      String.prototype.toLowerCase = foldingLowerCase;
      try {
        return run.apply(this, args);
      } finally {
        String.prototype.toLowerCase = toLowerCase;
      }
    };

  const performSearch = accentBlind(Search._performSearch);
  // The object terms were lower-cased before the search (Search._parseQuery).
  Search._performSearch = (query, searchTerms, excluded, highlight, objects) =>
    performSearch(query, searchTerms, excluded, highlight,
      new Set([...objects].map(fold)));
  Search.makeSearchSummary = accentBlind(Search.makeSearchSummary);
})();
