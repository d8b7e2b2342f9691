"""Remove execution reports left by earlier builds.

Problem: myst-nb writes the traceback of a failing notebook to
``_build/html/reports/<page>.err.log`` but never deletes it, so after the cell is
fixed the site still ships the old report and a check for reports fails. A failed
notebook is never cached, so it runs again (and writes its report again) in every
build until it is fixed: deleting the folder when a build starts loses nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx


def _remove_reports(app: Sphinx) -> None:
    shutil.rmtree(Path(app.outdir) / "reports", ignore_errors=True)


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", _remove_reports)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
