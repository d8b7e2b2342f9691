"""The strings our own extensions put on a page, in the page's language.

Problem: Sphinx and the theme translate their own words ("Next", "Search") from
their catalogues, and the chapters are translated by the ``.po`` files of
``locales/``; but the words our extensions write ("Cite this chapter", the
notebook links, the first cell of a notebook, the footer) are in none of them.

Answer: ``bookbuild``'s own gettext domain,
``bookbuild/locale/<lang>/LC_MESSAGES/bookbuild.po`` (compiled beside it as
``bookbuild.mo``; :mod:`bookbuild.i18n.domains` extracts, merges, compiles
and checks it with ``make translations`` and the French check). The English
text is the ``msgid``. ``_ = gettext(language)`` (the build's
``app.config.language``) then ``_("Cite this chapter")``; a message missing
from a language's catalogue raises ``LookupError`` (never a silent English
page in the French edition). French typography: a narrow no-break space
(U+202F) before ``:``, ``;``, ``?`` and ``!``, and « guillemets » with no-break
spaces (U+00A0) inside.
"""

from __future__ import annotations

import functools
import gettext as _gettext
from collections.abc import Callable
from pathlib import Path

from babel.messages.pofile import read_po

NNBSP = "\u202f"  # before ; ? ! and :
NBSP = "\u00a0"  # inside « »

#: The folder of ``bookbuild``'s catalogues (Sphinx's layout).
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
#: The gettext domain of ``bookbuild``'s messages.
DOMAIN = "bookbuild"


def N_(message: str) -> str:
    """``message``, marked for the extraction (translated where it is shown)."""
    return message


def base_language(language: str | None) -> str:
    """``fr`` for ``fr``, ``fr_CA`` or ``fr-BE``; ``en`` for none."""
    return (language or "en").replace("-", "_").split("_")[0].lower()


@functools.cache
def catalogue(language: str | None) -> _gettext.NullTranslations:
    """``bookbuild``'s catalogue of ``language`` (its base language): none for
    English or a language without one (its words stay English), else the
    compiled ``.mo``, which raises ``LookupError`` for a message it lacks
    (:func:`qkv.language.load_catalogue`, which loads ``qkv``'s too).

    ``qkv`` is imported here, not at the top: importing it imports torch, and
    the build imports this module (through :mod:`bookbuild.patches`) before
    :mod:`bookbuild.execute.environment` has checked that torch imports, so
    that a broken torch gets that check's one line, not a traceback."""
    from qkv.language import load_catalogue

    base = base_language(language)
    if (
        base == "en"
        or not (LOCALE_DIR / base / "LC_MESSAGES" / f"{DOMAIN}.mo").is_file()
    ):
        return _gettext.NullTranslations()
    return load_catalogue(DOMAIN, LOCALE_DIR, base)


def gettext(language: str | None) -> Callable[[str], str]:
    """The translating function ``_`` of a language (English text in, out)."""
    return catalogue(language).gettext


def translations(language: str) -> dict[str, str]:
    """Every message of ``language``'s catalogue: English -> translation (the
    words :mod:`bookbuild.tools.english_words` counts as French)."""
    path = LOCALE_DIR / base_language(language) / "LC_MESSAGES" / f"{DOMAIN}.po"
    if not path.is_file():
        return {}
    with path.open("rb") as po:
        return {m.id: m.string for m in read_po(po) if m.id and m.string}
