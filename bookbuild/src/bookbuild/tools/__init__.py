"""Commands and helpers around the build, none of them loaded by Sphinx: the
strict test build and the browser (:mod:`~bookbuild.tools.testing`,
:mod:`~bookbuild.tools.browser`), PDF handouts, two clean builds compared
(``make same-site``), the lock file, the chapters' code style, and the
benchmarks (``make bench``, ``bench-toy``, ``bench-models``, ``bench-attention``)."""
