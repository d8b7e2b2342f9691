"""Stamp the build date and commit into the build-info page and every footer.

Problem: a chapter's outputs come from the execution cache, so a code cell cannot
report when the site was built, and Sphinx does not even re-read an unchanged page.

Answer: the pages listed in ``build_info_pages`` are marked outdated at every
build (cheap: their code comes from the cache), and while their source is read the
placeholders ``%%BUILD_DATE%%`` and ``%%BUILD_COMMIT%%`` are replaced by the current
UTC time and the git commit of the book (``unknown`` outside a git checkout).
The headers of myst-nb's table of execution times are written in the page's
language (:class:`TranslateExecTable`).
Every page's footer also gives the book's version, the commit, the build date and
the torch version. The footer leaves out the time of day: two builds of one day
give the same footers.

The commit is named the same way everywhere it appears: the footer (and so the
first page of every PDF handout, which prints it), the build-info page and every
BibTeX entry (:mod:`bookbuild.site.citation`) show :func:`build_commit`, which
:func:`commit` computes once per build: the short commit, with ``+changes`` when
the working tree's tracked files differ from it (``407d65c+changes``), since such
a build's text is not that commit's. A build that switches from a clean tree to
a dirty one rewrites its pages' footers (not their execution).

The build time is the current time, or the one ``SOURCE_DATE_EPOCH`` gives (the
reproducible-builds convention: seconds since 1970), so that two builds of the
same commit can be compared file by file (``python -m bookbuild.tools.same_site``).
"""

from __future__ import annotations

import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform

from bookbuild.i18n.languages import is_translation
from bookbuild.i18n.messages import N_, gettext
from bookbuild.i18n.numbers import localise_number
from bookbuild.toc import book_root


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=10
    )
    return done.stdout.strip()


#: What a build from a working tree whose tracked files differ from its commit
#: adds to the commit's name.
CHANGES = "+changes"


#: The lines ``make addresses`` writes into three files before the publishing
#: workflow builds the site (:mod:`bookbuild.site.urls`): filling in the book's
#: addresses is publishing that commit, not changing its text.
ADDRESS_LINES = {
    "_config.yml": re.compile(r'^  (url|baseurl): "[^"]*"(\s*#.*)?$'),
    "pyproject.toml": re.compile(r'^(Homepage|Source|Issues) = "[^"]*"$'),
    "CITATION.cff": re.compile(r'^(url|repository-code|commit): "[^"]*"$'),
}


def changed_text(diff: str) -> bool:
    """True if ``git diff`` output ``diff`` changes anything but the lines of
    :data:`ADDRESS_LINES` (a file of its own, a deleted file, a binary one)."""
    pattern = None
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            name = line.rsplit(" b/", 1)[-1]
            pattern = ADDRESS_LINES.get(name)
            if pattern is None:
                return True
        elif line.startswith(("--- ", "+++ ")):
            continue
        elif line.startswith(("+", "-")) and not pattern.match(line[1:]):
            return True
        elif line.startswith(("Binary ", "deleted file", "new file", "old mode")):
            return True
    return False


def commit(root: Path) -> str:
    """The commit marker of ``root``'s checkout: its short commit, with
    ``+changes`` if a tracked file differs from it (beyond the addresses
    ``make addresses`` fills in); ``unknown`` outside git."""
    try:
        sha = _git(root, "rev-parse", "--short", "HEAD")
        diff = _git(root, "diff", "--no-color", "--no-ext-diff", "-U0", "HEAD")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{sha}{CHANGES}" if changed_text(diff) else sha


def build_commit(app: Sphinx) -> str:
    """The commit marker of this build (:func:`commit` of the book's folder),
    computed once: the footer, the build-info page and every BibTeX entry name
    the same one, even if the tree changes while the build runs."""
    marker = getattr(app, "_qkv_build_commit", None)
    if marker is None:
        marker = commit(book_root(Path(app.srcdir)))
        app._qkv_build_commit = marker
    return marker


def build_time() -> datetime:
    """Now, or ``SOURCE_DATE_EPOCH`` when set, in UTC."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), UTC)
    return datetime.now(UTC)


def _always_outdated(app, env, added, changed, removed):
    return [page for page in app.config.build_info_pages if page in env.found_docs]


def _stamped(app: Sphinx, text: str) -> str:
    stamp = build_time().strftime("%Y-%m-%d %H:%M UTC")
    return text.replace("%%BUILD_DATE%%", stamp).replace(
        "%%BUILD_COMMIT%%", build_commit(app)
    )


def _after_translation(app: Sphinx) -> bool:
    """In a translated build (and the extraction of messages), the placeholders
    are filled after Sphinx has translated the page: the messages keep them, so
    that they do not change at every build."""

    if app.builder.name == "gettext":
        return True
    return "book_languages" in app.config and is_translation(app.config)


def _stamp(app: Sphinx, docname: str, source: list[str]) -> None:
    if docname not in app.config.build_info_pages or _after_translation(app):
        return
    source[0] = _stamped(app, source[0])


class StampTranslated(SphinxTransform):
    default_priority = 25  # after Sphinx's Locale (20)

    def apply(self) -> None:
        if self.env.docname not in self.config.build_info_pages:
            return
        if not _after_translation(self.app):
            return
        for text in list(self.document.findall(nodes.Text)):
            if "%%BUILD_" in text:
                text.parent.replace(text, nodes.Text(_stamped(self.app, str(text))))


#: The headers of myst-nb's table of execution times (``nb-exec-table``), which
#: myst-nb writes in English: each goes through ``bookbuild.i18n.messages``.
EXEC_TABLE_HEADERS = (
    N_("Document"),
    N_("Modified"),
    N_("Method"),
    N_("Run Time (s)"),
    N_("Status"),
)


class TranslateExecTable(SphinxPostTransform):
    """The headers of the execution-time table in the page's language (myst-nb
    builds the table after the translation, in its post-transform of priority 8)."""

    default_priority = 9

    def run(self, **kwargs) -> None:
        if self.env.docname in self.config.build_info_pages:
            translate_exec_table(self.document, self.config.language)


def translate_exec_table(document: nodes.Node, language: str | None) -> int:
    """The headers and the durations of each execution-time table of
    ``document`` in ``language`` (``1.88`` -> ``1,88`` in French; unchanged in
    English); returns how many tables it found."""

    _ = gettext(language)
    found = 0
    duration = EXEC_TABLE_HEADERS.index("Run Time (s)")
    for thead in document.findall(nodes.thead):
        texts = [entry.astext() for entry in thead.findall(nodes.entry)]
        if tuple(texts) != EXEC_TABLE_HEADERS:
            continue
        found += 1
        for text in list(thead.findall(nodes.Text)):
            text.parent.replace(text, nodes.Text(_(str(text))))
        # the durations the page's way ("1,88" in French), as every number
        for tbody in thead.parent.findall(nodes.tbody):
            for row in tbody.findall(nodes.row):
                entries = list(row.findall(nodes.entry))
                if len(entries) <= duration:
                    continue
                for text in list(entries[duration].findall(nodes.Text)):
                    written = localise_number(str(text).strip(), language)
                    text.parent.replace(text, nodes.Text(written))
    return found


def _footer(app: Sphinx, config) -> None:
    """Provenance on every page: book version, commit, build date, torch."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    _ = gettext(config.language)  # the footer in the page's language
    stamp = build_time().strftime("%Y-%m-%d")
    footer = (
        f"{config.html_title} {installed('qkv')} · commit "
        f"{build_commit(app)} · "
        f"{_('built {date}').format(date=stamp)} · torch {installed('torch')}"
    )
    options = dict(config.html_theme_options or {})
    options["extra_footer"] = f'<p class="qkv-provenance">{footer}</p>'
    config.html_theme_options = options


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _footer)
    app.add_config_value("build_info_pages", ["book/build-info"], "env", [list])
    app.connect("env-get-outdated", _always_outdated)
    app.connect("source-read", _stamp)
    app.add_transform(StampTranslated)
    app.add_post_transform(TranslateExecTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
