"""The catalogues of the packages' own words: ``qkv`` and ``bookbuild``.

Problem: the chapters are translated by the ``.po`` files of ``locales/``; the
words the packages write (``qkv``'s checker hints, figure labels, widget
labels and argument errors; ``bookbuild``'s "Cite this chapter", notebook
cells and footer) are in none of them.

Answer: one gettext domain per package, Sphinx's own layout
(``sphinx/locale/<lang>/LC_MESSAGES/sphinx.po``):
``src/qkv/locale/<lang>/LC_MESSAGES/qkv.po`` and
``bookbuild/src/bookbuild/locale/<lang>/LC_MESSAGES/bookbuild.po``. The
English text is the ``msgid`` (a ``msgctxt`` where one English word needs two
translations); the compiled ``.mo`` is committed beside its ``.po`` (as Django
does) and ships as package data, so that a reader's ``qkv`` speaks French
with nothing but ``qkv`` installed. The same commands as the chapters':

* :func:`extract`: the messages of the package's calls to the functions of
  :data:`KEYWORDS` (read by Python's own parser, which sees inside f-strings,
  unlike Babel's extractor here), into ``_build/gettext/<domain>.domain.pot``.
* :func:`update` (``make translations``): extract, merge into each language's
  ``.po`` (a changed message becomes ``#, fuzzy``; one no code uses any more is
  dropped), compile the ``.mo``.
* :func:`problems` (``python -m bookbuild.i18n.translations check``): a
  message with no translation or a fuzzy one, a translation no code uses, a
  ``.mo`` out of step with its ``.po``, a ``{placeholder}`` lost or added.
"""

from __future__ import annotations

import ast
import io
import re
from dataclasses import dataclass
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po, write_po

#: The functions whose literal arguments are messages, per domain: gettext's
#: own (``_``, ``gettext``), ``N_`` (a message marked where it is written,
#: translated where it is shown), and the helpers that fill a message in
#: (``qkv``: ``check._say`` and ``_Say``, ``validate.message``,
#: ``translate._message``, ``diagrams._t``; ``bookbuild``: ``say``, the
#: ``_`` of a notebook's resolver). ``pgettext`` takes the context first.
KEYWORDS = {
    "qkv": frozenset(
        {"_", "gettext", "N_", "_say", "_Say", "message", "_message", "_t"}
    ),
    "bookbuild": frozenset({"_", "N_", "say"}),
}
CONTEXT_KEYWORDS = frozenset({"pgettext"})


def messages_of(
    path: Path, keywords: frozenset[str]
) -> list[tuple[int, str | None, str]]:
    """``(line, context, message)`` for every call of one of ``keywords`` or
    :data:`CONTEXT_KEYWORDS` whose message is a literal string, in the order
    of the file (Python's own parser: inside f-strings too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        literal = [
            a.value
            if isinstance(a, ast.Constant) and isinstance(a.value, str)
            else None
            for a in node.args
        ]
        if name in keywords and literal[:1] and literal[0] is not None:
            found.append((node.lineno, None, literal[0]))
        elif name in CONTEXT_KEYWORDS and len(literal) >= 2 and None not in literal[:2]:
            found.append((node.lineno, literal[0], literal[1]))
    return sorted(found, key=lambda m: m[0])


#: The width of the ``.po`` files' lines (the book's own).
WIDTH = 88


@dataclass(frozen=True)
class Domain:
    """A package's catalogue: its name, its source folder and its
    ``locale`` folder, both relative to the book's folder."""

    name: str
    source: str

    def locale(self, root: Path) -> Path:
        return Path(root) / self.source / "locale"

    def po(self, root: Path, language: str) -> Path:
        return self.locale(root) / language / "LC_MESSAGES" / f"{self.name}.po"

    def mo(self, root: Path, language: str) -> Path:
        return self.po(root, language).with_suffix(".mo")


#: The packages' catalogues.
DOMAINS = (Domain("qkv", "src/qkv"), Domain("bookbuild", "bookbuild/src/bookbuild"))


def template(root: Path, domain: Domain) -> Catalog:
    """Every message of ``domain``'s Python files, with where it is written."""
    catalogue = Catalog(domain=domain.name, project="Attention, Computed")
    source = Path(root) / domain.source
    for path in sorted(source.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        for line, context, message in messages_of(path, KEYWORDS[domain.name]):
            flags = ["python-brace-format"] if _PLACEHOLDER.search(message) else []
            known = catalogue.get(message, context=context)
            if known is not None:
                known.locations.append((where, line))
                continue
            catalogue.add(message, None, [(where, line)], flags=flags, context=context)
    return catalogue


def extract(root: Path, target: Path | None = None) -> dict[str, Catalog]:
    """Each domain's template, also written to ``_build/gettext``."""
    target = Path(root) / "_build" / "gettext" if target is None else target
    target.mkdir(parents=True, exist_ok=True)
    templates = {}
    for domain in DOMAINS:
        templates[domain.name] = template(root, domain)
        with (target / f"{domain.name}.domain.pot").open("wb") as pot:
            write_po(pot, templates[domain.name], width=WIDTH, omit_header=True)
    return templates


def read(path: Path) -> Catalog:
    with path.open("rb") as po:
        return read_po(po, locale=path.parts[-3], domain=path.stem)


def write(path: Path, catalogue: Catalog) -> None:
    """``catalogue`` as the ``.po`` at ``path`` (obsolete messages dropped,
    no line numbers: a moved line changes no catalogue) and its ``.mo``."""
    catalogue.obsolete.clear()
    with path.open("wb") as po:
        write_po(po, catalogue, width=WIDTH, no_location=True)
    path.with_suffix(".mo").write_bytes(compiled(catalogue))


def compiled(catalogue: Catalog) -> bytes:
    """The ``.mo`` of ``catalogue``: translated, not fuzzy messages only (a
    message it lacks raises ``LookupError`` in :mod:`qkv.language`)."""
    out = io.BytesIO()
    write_mo(out, catalogue, use_fuzzy=False)
    return out.getvalue()


def languages(root: Path, domain: Domain) -> list[str]:
    locale = domain.locale(root)
    if not locale.is_dir():
        return []
    return sorted(p.name for p in locale.iterdir() if (p / "LC_MESSAGES").is_dir())


def update(root: Path) -> int:
    """Extract, merge into every ``.po`` of every domain, compile the ``.mo``."""
    templates = extract(root)
    for domain in DOMAINS:
        for language in languages(root, domain):
            path = domain.po(root, language)
            catalogue = read(path)
            # The catalogue's own date: a refresh that changes no message changes
            # no file.
            templates[domain.name].creation_date = catalogue.creation_date
            catalogue.update(templates[domain.name], no_fuzzy_matching=False)
            write(path, catalogue)
            done = sum(1 for m in list(catalogue)[1:] if m.string and not m.fuzzy)
            print(f"{path.relative_to(root)}: {done} of {len(catalogue)} translated")
    return 0


_PLACEHOLDER = re.compile(r"\{\w*\}")


def _key(message) -> tuple[str | None, str]:
    return (message.context, message.id)


def problems(root: Path, templates: dict[str, Catalog] | None = None) -> list[str]:
    """What the French check reports for the domains (see the module's text)."""
    templates = extract(root) if templates is None else templates
    found = []
    for domain in DOMAINS:
        wanted = {_key(m): m for m in list(templates[domain.name])[1:]}
        for language in languages(root, domain):
            path = domain.po(root, language)
            where = path.relative_to(root)
            catalogue = read(path)
            have = {_key(m): m for m in list(catalogue)[1:]}
            for key, message in wanted.items():
                entry = have.get(key)
                place = ", ".join(f"{f}:{n}" for f, n in message.locations)
                if entry is None or not entry.string:
                    found.append(f"{where}: no translation of {key[1]!r} ({place})")
                elif entry.fuzzy:
                    found.append(f"{where}: fuzzy translation of {key[1]!r} ({place})")
                elif sorted(_PLACEHOLDER.findall(entry.id)) != sorted(
                    _PLACEHOLDER.findall(entry.string)
                ):
                    found.append(
                        f"{where}: the placeholders of {key[1]!r} and its "
                        "translation differ"
                    )
            for key in have.keys() - wanted.keys():
                found.append(
                    f"{where}: {key[1]!r} is used by no code (make translations)"
                )
            mo = path.with_suffix(".mo")
            if not mo.is_file() or not _same(read_mo(mo.open("rb")), catalogue):
                found.append(
                    f"{mo.relative_to(root)} is not the compiled {path.name} "
                    "(make translations compiles it)"
                )
    return found


def _text(context: str | bytes | None) -> str | None:
    return context.decode("utf-8") if isinstance(context, bytes) else context


def _same(compiled_catalogue: Catalog, catalogue: Catalog) -> bool:
    def pairs(c: Catalog) -> set:
        # Babel's read_mo gives a context as bytes.
        return {
            (_text(m.context), m.id, m.string)
            for m in list(c)[1:]
            if m.string and not m.fuzzy
        }

    return pairs(compiled_catalogue) == pairs(catalogue)


def main() -> int:
    found = problems(Path(".").resolve())
    for problem in found:
        print(problem)
    print(f"domains: {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
