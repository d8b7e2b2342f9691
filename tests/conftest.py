"""Shared fixtures: the book, built once per test session (incrementally, cached)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bookbuild.testing import BuildResult, build_book

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def built_book() -> BuildResult:
    """The book built strictly from this checkout into _build/html."""
    return build_book(ROOT, prefill=True)
