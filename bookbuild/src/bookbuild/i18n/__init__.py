"""The book in several languages from one source (gettext catalogues in
``locales/``).

:mod:`~bookbuild.i18n.languages` is the Sphinx extension: per-language settings,
the language menu, and the fixes of this stack's gaps, loaded in order.
:mod:`~bookbuild.i18n.patches` is the one place where another package's method is
replaced at run time. :mod:`~bookbuild.i18n.translations` builds the translated
sites and keeps the catalogues (``python -m bookbuild.i18n.translations``);
:mod:`~bookbuild.i18n.messages` holds the words of our own extensions."""
