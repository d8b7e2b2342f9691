"""bookbuild: what builds, checks and prints the book *Attention, Computed*.

The other wing of the project: :mod:`qkv` is the attention code a reader studies;
this package is the machinery around it. Its modules:

* Sphinx extensions (each loaded through a thin file in ``_ext/``):
  :mod:`~bookbuild.cache` (the execution cache follows the code),
  :mod:`~bookbuild.mathjax` (offline math), :mod:`~bookbuild.reports`,
  :mod:`~bookbuild.build_info` (provenance), :mod:`~bookbuild.edition` (student
  edition), :mod:`~bookbuild.notebooks` (a plain notebook per chapter),
  :mod:`~bookbuild.site_root`, :mod:`~bookbuild.glue_dependencies`,
  :mod:`~bookbuild.i18n` (the book in several languages, with the five
  ``i18n_*`` fixes and :mod:`~bookbuild.messages`);
* the translations: :mod:`~bookbuild.translations` (``python -m
  bookbuild.translations``: build, extract, update, stats, check);
* the build before Sphinx: :mod:`~bookbuild.prefill` (chapters executed in
  parallel, ``python -m bookbuild.prefill``) in kernels from
  :mod:`~bookbuild.kernels`;
* reading the book: :mod:`~bookbuild.toc` (pages and lessons of ``_toc.yml``);
* printing and checking the site: :mod:`~bookbuild.browser` (local server and
  Chromium), :mod:`~bookbuild.handouts` (``python -m bookbuild.handouts``),
  :mod:`~bookbuild.testing` (the strict build, for the tests);
* measuring: :mod:`~bookbuild.bench` (build times), :mod:`~bookbuild.bench_toy`.

Every command runs from the book's folder (the Makefile does so).
"""
