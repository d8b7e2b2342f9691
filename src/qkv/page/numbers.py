r"""Numbers printed the page's way: what a chapter prints, in its language.

A chapter prints with Python's format specs (``f"{accuracy:.3f}"``), which
write numbers the English way without thousands separators. Wrapped in
:func:`num`, the same spec writes them in the current language of :mod:`qkv`
(:func:`qkv.set_language`), so that a reader's French notebook prints French
numbers too::

    print(f"test accuracy {num(accuracy):.3f}, {num(n_params)} parameters")
    # en: test accuracy 0.976, 79,972 parameters
    # fr: test accuracy 0,976, 79 972 parameters   (U+202F between 79 and 972)

The rules, one per language, the same for prose, tables, outputs and widgets:

* **Thousands** are always grouped, from four digits on, as the book's prose
  does (``4,096``; French ``4 096`` with a narrow no-break space, U+202F),
  whether or not the spec asks for it (``,``): a spec's grouping is the
  language's, never Python's ``_``.
* **Decimals**: English a point, French a comma (``0.976`` / ``0,976``).
* **Percent**: English ``97.6%``, French ``97,6 %`` (U+202F before ``%``).
* **Powers of ten** are written as such in both languages, readable on a
  projector: ``3.4 × 10⁻⁹`` / ``3,4 × 10⁻⁹`` (U+202F around ``×``), never
  ``3.4e-09``; that is what the ``e`` and ``g`` specs give.
* The minus sign stays Python's ``-`` (as :mod:`qkv.language` and the French
  build of the book write it); a value that rounds to zero loses its sign
  (``-0.0001`` with ``.2f`` is ``0.00``). Rounding is Python's (the exact
  binary value, halves to even).
* Not a number: ``NaN``; infinities ``∞`` and ``-∞``.

:func:`number` is the function; :func:`num` wraps a value so that an f-string's
spec goes through it; :func:`localise` writes again a number that Python
already wrote (``"1.2e+05"``, ``"4096"``, ``"97.6%"``) by the same rule: it is
what :mod:`qkv.language` (:func:`~qkv.language.format_number`, tables of
:mod:`qkv.page.glue`) and the book's build (``bookbuild.i18n.numbers``: glued
values in prose and tables, in both editions) call. One rule, one
implementation. :func:`byte_units` gives the binary units of a language
(English ``KiB``, French ``Kio``), used by :func:`qkv.page.glue.human_bytes`.
"""

from __future__ import annotations

import math
import numbers
import re

from qkv.language import get_language

__all__ = [
    "ENGLISH_NUMBER",
    "Num",
    "byte_units",
    "decimal_sign",
    "localise",
    "num",
    "number",
]

#: A narrow no-break space: French thousands, before ``%``, around ``×``.
NNBSP = "\u202f"

#: Per language: (thousands separator, decimal sign, before ``%``).
STYLES = {"en": (",", ".", ""), "fr": (NNBSP, ",", NNBSP)}

#: Per language: the unit of a byte and its binary multiples, smallest first.
BYTE_UNITS = {
    "en": ("B", "KiB", "MiB", "GiB", "TiB", "PiB"),
    "fr": ("o", "Kio", "Mio", "Gio", "Tio", "Pio"),
}

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


def _language(language: str | None) -> str:
    language = language or get_language()
    if language not in STYLES:
        raise ValueError(f"language must be one of {tuple(STYLES)}, got {language!r}")
    return language


def _real(value: object) -> int | float:
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
    current language of :mod:`qkv`) writes numbers: see the module's rules.

    >>> number(79972, language="fr") == "79\u202f972"
    True
    >>> number(3.4e-9, ".1e")
    '3.4\u202f×\u202f10⁻⁹'

    Raises:
        ValueError: if ``value`` is not one real number, ``spec`` not a
            format spec for it, or ``language`` not one of the book's.
    """
    language = _language(language)
    value = _real(value)
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
    language = _language(language)
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


class Num:
    """A number whose f-string spec writes it in the current language:
    ``f"{num(x):.3f}"`` is ``number(x, ".3f")``; ``str(num(x))`` is
    ``number(x)``."""

    __slots__ = ("language", "value")

    def __init__(self, value: object, language: str | None = None) -> None:
        self.value = _real(value)
        self.language = language

    def __format__(self, spec: str) -> str:
        return number(self.value, spec, language=self.language)

    def __str__(self) -> str:
        return number(self.value, language=self.language)

    def __repr__(self) -> str:
        return f"num({self.value!r})"


def num(value: object, language: str | None = None) -> Num:
    """``value`` to print in the page's language with a format spec:
    ``f"{num(accuracy):.3f}"`` (see :func:`number`).

    Raises:
        ValueError: if ``value`` is not one real number.
    """
    return Num(value, language)


def byte_units(language: str | None = None) -> tuple[str, ...]:
    """The byte and its binary multiples in ``language`` (by default the
    current one): ``("B", "KiB", ...)``; French ``("o", "Kio", ...)``."""
    return BYTE_UNITS[_language(language)]


def decimal_sign(language: str | None = None) -> str:
    """The decimal sign of ``language`` (by default the current one): ``.``
    or ``,``."""
    return STYLES[_language(language)][1]
