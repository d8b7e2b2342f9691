"""The language in which :mod:`qkv` writes what a reader sees (the French edition).

The book has an English and a French edition; each chapter runs in the
language of its page, and what ``qkv`` draws, prints and says follows it:
figure labels and tick numbers, tables written by code, the checkers' messages
and the argument errors. Code identifiers never change.

* :func:`set_language` and :func:`get_language`; the first language comes from
  the environment variable ``QKV_LANGUAGE`` (default ``"en"``).
* :func:`gettext` (also ``_``) and :func:`pgettext`: a message in the current
  language, from ``qkv``'s gettext catalogue
  (``qkv/locale/<language>/LC_MESSAGES/qkv.po``, compiled beside it as
  ``qkv.mo``, which ships in the package). The English text is the message;
  a context tells apart one English word that needs two translations. A
  message missing from the catalogue raises ``LookupError``: a page never
  falls back to English silently. :func:`N_` marks a message where it is
  written (a table of labels) for the extraction, to be translated where it
  is shown.
* :func:`format_number` and :func:`localise`: numbers the language's way, by
  the book's one rule, :func:`qkv.page.numbers.number` (English ``4,096``,
  ``0.25``, ``3.4 × 10⁻⁹``; French ``4 096``, ``0,25``, ``3,4 × 10⁻⁹``,
  ``97,6 %``, with narrow no-break spaces, U+202F). It lives in
  :mod:`qkv.page.numbers`, outside the code that keys trained results, and is
  imported when a number is written.
"""

from __future__ import annotations

import functools
import gettext as _gettext
import os
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = [
    "LANGUAGES",
    "N_",
    "format_number",
    "get_language",
    "gettext",
    "language_from_environment",
    "load_catalogue",
    "localise",
    "on_change",
    "pgettext",
    "set_language",
    "translated",
]

#: The languages of the book's editions.
LANGUAGES = ("en", "fr")

#: A narrow no-break space: French thousands, and the space before ``%``.
NNBSP = "\u202f"


def _checked(name: str, code: object) -> str:
    if not isinstance(code, str) or code not in LANGUAGES:
        raise ValueError(f"{name} must be one of {LANGUAGES}, got {code!r}")
    return code


def language_from_environment() -> str:
    """The language named by the environment variable ``QKV_LANGUAGE``
    (``"en"`` when it is unset or empty); ``ValueError`` for another code."""
    return _checked("QKV_LANGUAGE", os.environ.get("QKV_LANGUAGE") or "en")


_language = language_from_environment()
_hooks: list[Callable[[str], None]] = []


def get_language() -> str:
    """The language ``qkv`` writes in: ``"en"`` or ``"fr"``."""
    return _language


def set_language(code: str) -> None:
    """Write figures, tables and messages in ``code``, one of :data:`LANGUAGES`.

    Raises:
        ValueError: if ``code`` is not one of :data:`LANGUAGES`.
    """
    global _language
    _language = _checked("code", code)
    for hook in list(_hooks):
        hook(_language)


def on_change(hook: Callable[[str], None]) -> None:
    """Call ``hook(language)`` now and at every :func:`set_language` (how a
    module that keeps global state, such as matplotlib's tick formatters,
    follows the language)."""
    _hooks.append(hook)
    hook(_language)


#: The folder of ``qkv``'s catalogues: ``<language>/LC_MESSAGES/qkv.po`` (and
#: the compiled ``qkv.mo`` beside it), Sphinx's own layout.
LOCALE_DIR = Path(__file__).parent / "locale"
#: The gettext domain of ``qkv``'s messages.
DOMAIN = "qkv"


class _Missing(_gettext.NullTranslations):
    """The last fallback of a catalogue: a message it lacks is an error that
    names the catalogue to complete (never a silent English fallback)."""

    def __init__(self, language: str, po: Path) -> None:
        super().__init__()
        self.language = language
        self.po = po

    def _lacks(self, message: str, context: str | None = None) -> LookupError:
        meant = "" if context is None else f" (context {context!r})"
        return LookupError(
            f"no {self.language!r} translation of the message {message!r}{meant} "
            f"in {self.po} (make translations, then translate it)"
        )

    def gettext(self, message: str) -> str:
        raise self._lacks(message)

    def pgettext(self, context: str, message: str) -> str:
        raise self._lacks(message, context)

    def ngettext(self, msgid1: str, msgid2: str, n: int) -> str:
        raise self._lacks(msgid1)

    def npgettext(self, context: str, msgid1: str, msgid2: str, n: int) -> str:
        raise self._lacks(msgid1, context)


def load_catalogue(
    domain: str, locale_dir: Path, language: str
) -> _gettext.GNUTranslations:
    """The compiled catalogue of the gettext ``domain`` in ``language``,
    ``<locale_dir>/<language>/LC_MESSAGES/<domain>.mo`` (Sphinx's layout),
    which raises ``LookupError`` for a message it lacks, naming the ``.po``
    beside it: ``qkv``'s catalogues (:func:`translations`) and ``bookbuild``'s
    (``bookbuild.i18n.messages``) are loaded by this one function.

    Raises:
        FileNotFoundError: if the compiled catalogue is not there.
    """
    path = Path(locale_dir) / language / "LC_MESSAGES" / f"{domain}.mo"
    with path.open("rb") as compiled:
        catalogue = _gettext.GNUTranslations(compiled)
    catalogue.add_fallback(_Missing(language, path.with_suffix(".po")))
    return catalogue


@functools.cache
def translations(language: str) -> _gettext.NullTranslations:
    """``qkv``'s catalogue for ``language``: none for English (its messages
    are English), else the compiled ``qkv.mo``, which raises ``LookupError``
    for a message it lacks (:func:`load_catalogue`)."""
    language = _checked("language", language)
    if language == "en":
        return _gettext.NullTranslations()
    return load_catalogue(DOMAIN, LOCALE_DIR, language)


def gettext(message: str, *, language: str | None = None) -> str:
    """``message`` (its English) in ``language``, by default the current one.

    Raises:
        LookupError: if the catalogue has no translation of it (never a
            silent English fallback).
    """
    return translations(language or _language).gettext(message)


def pgettext(context: str, message: str, *, language: str | None = None) -> str:
    """``message`` in ``language`` (by default the current one), as meant in
    ``context``: one English word that needs two translations, or a key that
    is not English.

    Raises:
        LookupError: if the catalogue has no translation of it.
    """
    return translations(language or _language).pgettext(context, message)


#: The usual short name of :func:`gettext`.
_ = gettext


def translated(
    messages: Mapping[str, str], language: str | None = None
) -> dict[str, str]:
    """``{key: message}`` with every message in ``language`` (by default the
    current one): the labels a widget passes to its script.

    Raises:
        LookupError: if the catalogue lacks one of them.
    """
    return {key: gettext(m, language=language) for key, m in messages.items()}


def N_(message: str) -> str:
    """``message`` itself, marked for the extraction of the catalogue: a
    message written in one place (a table of labels) and translated where
    it is shown (``gettext_noop``)."""
    return message


def localise(written: str) -> str:
    """``written``, if it is entirely a number as Python writes it, in the
    current language by the book's one rule
    (:func:`qkv.page.numbers.localise`: French ``"4096"`` -> ``"4\u202f096"``,
    ``"0.25"`` -> ``"0,25"``; English ``"1.2e+05"`` -> ``"1.2 × 10⁵"``); any
    other text unchanged."""
    from qkv.page.numbers import localise as rule

    return rule(written)


class LocalNumber(str):
    """A number written in the current language, which remembers how Python
    writes it (:attr:`english`): :func:`qkv.page.glue.glue` pastes that one,
    which the French build localises once (never ``"0,125"`` read as thousands)."""

    english: str

    def __new__(cls, written: str, english: str) -> LocalNumber:
        number = super().__new__(cls, written)
        number.english = english
        return number


def format_number(value: float, spec: str = "") -> LocalNumber:
    """``format(value, spec)`` written the current language's way by the
    book's one rule (:func:`qkv.page.numbers.number`): ``format_number(4096)``
    is ``"4,096"`` in English and ``"4\u202f096"`` in French,
    ``format_number(0.25, ".2f")`` ``"0,25"`` in French; its :attr:`english`
    is the English writing, which :func:`qkv.page.glue.glue` pastes.

    Raises:
        ValueError: if ``value`` is not one real number or ``spec`` not a
            format spec for it.
    """
    from qkv.page.numbers import number

    return LocalNumber(number(value, spec), number(value, spec, language="en"))
