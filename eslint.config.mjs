// ESLint's flat configuration (make lint-js): the recommended rules on every
// script of the project, which run in the reader's browser.
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["_build/", ".venv/", "node_modules/"] },
  js.configs.recommended,
  {
    files: ["**/*.js"],
    languageOptions: {
      // Plain scripts (no modules), inlined in the page or added by Sphinx.
      ecmaVersion: 2020,
      sourceType: "script",
      globals: { ...globals.browser },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
  },
];
