"""bookbuild: what builds, checks and prints the book *Attention, Computed*.

The other wing of the project: :mod:`qkv` is the attention code a reader studies;
this package is the machinery around it, one subpackage per concern:

* :mod:`bookbuild.execute`: the chapters executed into a cache that follows the
  code they import, in parallel before Sphinx;
* :mod:`bookbuild.i18n`: the book in several languages from one source, and the
  one place where another package's method is replaced at run time;
* :mod:`bookbuild.site`: the Sphinx extensions that shape the site;
* :mod:`bookbuild.tools`: commands around the build (test build, browser, PDFs,
  same-site check, lock, benchmarks).

:mod:`bookbuild.toc` (the pages and lessons of ``_toc.yml``) is shared by all four.
``_config.yml`` loads the extensions by dotted path; every command runs from the
book's folder (``python -m bookbuild.<concern>.<module>``, as the Makefile does).
"""
