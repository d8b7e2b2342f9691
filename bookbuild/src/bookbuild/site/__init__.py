"""Sphinx extensions that shape the site: offline MathJax, build information,
the student edition, the chapters' notebooks, citations, public addresses, the
book's own style, a quiet log, a complete search index, no stale images, and
accessible citation lists. ``_config.yml`` names each by its dotted path."""
