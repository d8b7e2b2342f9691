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
* The book's one number rule, one implementation: :func:`number` (a value
  and a format spec), :func:`localise` (a number Python already wrote:
  ``"1.2e+05"``, ``"4096"``) and :func:`format_number` (a :class:`LocalNumber`
  that remembers its English writing, which glue pastes). English ``4,096``,
  ``0.25``, ``97.6%``, ``3.4 × 10⁻⁹``; French ``4 096``, ``0,25``,
  ``97,6 %``, ``3,4 × 10⁻⁹`` (narrow no-break spaces, U+202F). The rules are
  listed in :mod:`qkv.page.numbers`, which chapters print with (``num``); the
  rule lives here, in the core, because the core writes numbers too (the
  checkers' messages) and never imports :mod:`qkv.page`; the book's build
  (``bookbuild.i18n.numbers``) calls it for glued values on both sites.
"""

from __future__ import annotations

import functools
import gettext as _gettext
import math
import numbers
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = [
    "ENGLISH_NUMBER",
    "LANGUAGES",
    "N_",
    "STYLES",
    "format_number",
    "get_language",
    "gettext",
    "language_from_environment",
    "load_catalogue",
    "localise",
    "number",
    "number_language",
    "on_change",
    "pgettext",
    "real_number",
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


#: Per language: (thousands separator, decimal sign, before ``%``).
STYLES = {"en": (",", ".", ""), "fr": (NNBSP, ",", NNBSP)}

_SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")

#: A number written the English way, entirely: as Python writes one (a sign,
#: digits grouped by commas or not, decimals, an ``e`` exponent, a percent
#: sign) or as :func:`number` writes one in English (``3.4 × 10⁻⁹``).
ENGLISH_NUMBER = re.compile(
    r"(?P<sign>[-+]?)(?P<whole>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<decimals>\d+))?"
    r"(?:[eE](?P<exponent>[-+]?\d+)|[ \u202f]?×[ \u202f]?10(?P<power>⁻?[⁰¹²³⁴⁵⁶⁷⁸⁹]+))?"
    r"(?P<percent>%?)"
)

#: Python's format spec: [[fill]align][sign][z][#][0][width][grouping][.precision][type]
_SPEC = re.compile(
    r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?(?P<z>z)?(?P<alt>#)?"
    r"(?P<zero>0)?(?P<width>\d+)?(?P<grouping>[,_])?(?:\.(?P<precision>\d+))?"
    r"(?P<type>[bcdeEfFgGnosxX%])?",
    re.S,
)
#: A number as Python writes one with the inner spec.
_WRITTEN = re.compile(
    r"(?P<sign>[-+ ]?)(?P<whole>[\d,]+)(?:\.(?P<decimals>\d*))?"
    r"(?:[eE](?P<exponent>[-+]\d+))?(?P<percent>%?)"
)


def number_language(language: str | None) -> str:
    """``language``, by default the current one, checked: one of :data:`STYLES`."""
    language = language or get_language()
    if language not in STYLES:
        raise ValueError(f"language must be one of {tuple(STYLES)}, got {language!r}")
    return language


def real_number(value: object) -> int | float:
    """``value`` as a Python int or float: a number, a NumPy scalar or a
    one-number tensor (``.item()``)."""
    item = getattr(value, "item", None)
    if not isinstance(value, numbers.Real) and callable(item):
        numel = getattr(value, "numel", None) or getattr(value, "size", None)
        count = numel() if callable(numel) else numel
        if count != 1:
            shape = tuple(getattr(value, "shape", ()))
            raise ValueError(f"value must be one number, got a tensor of shape {shape}")
        value = item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"value must be a real number, got {value!r}")
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def number(value: object, spec: str = "", *, language: str | None = None) -> str:
    """``format(value, spec)`` written the way ``language`` (by default the
    current language of :mod:`qkv`) writes numbers: the rules are listed in
    :mod:`qkv.page.numbers`, whose ``num`` chapters print with.

    >>> number(79972, language="fr") == "79\u202f972"
    True
    >>> number(3.4e-9, ".1e")
    '3.4\u202f×\u202f10⁻⁹'

    Raises:
        ValueError: if ``value`` is not one real number, ``spec`` not a
            format spec for it, or ``language`` not one of the book's.
    """
    language = number_language(language)
    value = real_number(value)
    parts = _SPEC.fullmatch(spec)
    if parts is None:
        raise ValueError(f"spec must be a format spec for numbers, got {spec!r}")
    kind = parts["type"] or ""
    if kind in {"b", "c", "o", "s", "x", "X"}:
        raise ValueError(f"spec must format a decimal number, got {spec!r}")
    if kind == "n":
        kind = "g"
    if isinstance(value, float) and not math.isfinite(value):
        written = "NaN" if math.isnan(value) else ("∞" if value > 0 else "-∞")
        if value > 0 and parts["sign"] == "+":
            written = "+" + written
    else:
        grouping = "" if kind in {"e", "E"} else ","
        inner = (
            f"{parts['sign'] or ''}{parts['alt'] or ''}{grouping}"
            f"{'.' + parts['precision'] if parts['precision'] is not None else ''}"
            f"{kind}"
        )
        try:
            english = format(value, inner)
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"spec must be a format spec for value {value!r}, got {spec!r}: {error}"
            ) from None
        written = _written(english, language)
    width = int(parts["width"] or 0)
    if width:
        fill = parts["fill"] or ("0" if parts["zero"] and not parts["align"] else " ")
        align = parts["align"] or ">"
        if align == "=":
            align = ">"
        written = f"{written:{fill}{align}{width}}"
    return written


def _written(english: str, language: str) -> str:
    """A number as Python wrote it (grouped with commas), in ``language``."""
    match = _WRITTEN.fullmatch(english)
    if match is None:  # pragma: no cover (every decimal spec writes one)
        return english
    thousands, decimal, before_percent = STYLES[language]
    sign = match["sign"]
    digits = (match["whole"] or "") + (match["decimals"] or "")
    if sign == "-" and not digits.strip("0,"):
        sign = ""  # rounded to zero: no "-0.00"
    text = sign + match["whole"].replace(",", thousands)
    if match["decimals"] is not None:
        text += decimal + match["decimals"]
    if match["exponent"] is not None:
        power = str(int(match["exponent"])).translate(_SUPERSCRIPTS)
        text += f"{NNBSP}×{NNBSP}10{power}"
    if match["percent"]:
        text += before_percent + "%"
    return text


def localise(written: str, language: str | None = None) -> str:
    """``written``, if it is entirely a number written the English way
    (:data:`ENGLISH_NUMBER`: ``"4096"``, ``"4,096"``, ``"0.25"``,
    ``"1.2e+05"``, ``"97.6%"``), written again by the rule of ``language``
    (by default the current one): ``"4,096"``, ``"1.2 × 10⁵"`` in English,
    ``"4 096"``, ``"0,25"``, ``"97,6 %"`` in French; any other text (a word,
    a version ``2.13.0``, a shape ``(2, 6)``) unchanged.

    >>> localise("1.2e+05")
    '1.2\u202f×\u202f10⁵'
    >>> localise("0.25", "fr")
    '0,25'

    Raises:
        ValueError: if ``language`` is not one of the book's.
    """
    language = number_language(language)
    match = ENGLISH_NUMBER.fullmatch(written)
    if match is None:
        return written
    whole = match["whole"].replace(",", "")
    grouped = f"{int(whole):,}" if whole == whole.lstrip("0") or whole == "0" else whole
    english = match["sign"] + grouped
    if match["decimals"] is not None:
        english += "." + match["decimals"]
    if match["exponent"] is not None:
        english += f"e{int(match['exponent']):+03d}"
    elif match["power"] is not None:
        english += f"e{int(match['power'].translate(_DIGITS)):+03d}"
    return _written(english + match["percent"], language)


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
    book's one rule (:func:`number`): ``format_number(4096)``
    is ``"4,096"`` in English and ``"4\u202f096"`` in French,
    ``format_number(0.25, ".2f")`` ``"0,25"`` in French; its :attr:`english`
    is the English writing, which :func:`qkv.page.glue.glue` pastes.

    Raises:
        ValueError: if ``value`` is not one real number or ``spec`` not a
            format spec for it.
    """
    return LocalNumber(number(value, spec), number(value, spec, language="en"))
