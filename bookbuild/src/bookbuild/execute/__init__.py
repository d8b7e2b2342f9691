"""Executing the chapters: the execution cache keyed by the code they import
(:mod:`~bookbuild.execute.cache`), the parallel prefill before Sphinx
(:mod:`~bookbuild.execute.prefill`) and its warm kernels
(:mod:`~bookbuild.execute.kernels`), what every kernel starts with
(:mod:`~bookbuild.execute.kernel_config`), and no stale execution report
(:mod:`~bookbuild.execute.reports`)."""
