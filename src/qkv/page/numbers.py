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
already wrote (``"1.2e+05"``, ``"4096"``, ``"97.6%"``) by the same rule. One
rule, one implementation: ``number`` and ``localise`` live in the core,
:mod:`qkv.language` (whose ``format_number`` and whose checkers' messages use
them; the core never imports this subpackage), and are re-exported here; the
book's build (``bookbuild.i18n.numbers``: glued values in prose and tables,
in both editions) calls them too. :func:`byte_units` gives the binary units of
a language (English ``KiB``, French ``Kio``), used by
:func:`qkv.page.glue.human_bytes`.
"""

from __future__ import annotations

from qkv.language import (
    ENGLISH_NUMBER,
    STYLES,
    localise,
    number,
    number_language,
    real_number,
)

__all__ = [
    "ENGLISH_NUMBER",
    "Num",
    "byte_units",
    "decimal_sign",
    "localise",
    "num",
    "number",
]

#: Per language: the unit of a byte and its binary multiples, smallest first.
BYTE_UNITS = {
    "en": ("B", "KiB", "MiB", "GiB", "TiB", "PiB"),
    "fr": ("o", "Kio", "Mio", "Gio", "Tio", "Pio"),
}


class Num:
    """A number whose f-string spec writes it in the current language:
    ``f"{num(x):.3f}"`` is ``number(x, ".3f")``; ``str(num(x))`` is
    ``number(x)``."""

    __slots__ = ("language", "value")

    def __init__(self, value: object, language: str | None = None) -> None:
        self.value = real_number(value)
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
    return BYTE_UNITS[number_language(language)]


def decimal_sign(language: str | None = None) -> str:
    """The decimal sign of ``language`` (by default the current one): ``.``
    or ``,``."""
    return STYLES[number_language(language)][1]
