"""The built site served on 127.0.0.1, and Debian's Chromium to look at it.

Shared by the PDF handouts (:mod:`bookbuild.tools.handouts`) and the browser tests, so
that both serve the site, start the browser and wait for the math the same way.
The browser is Debian's ``/usr/bin/chromium`` (``QKV_CHROMIUM`` to use another)
driven by the Python playwright package; never a downloaded browser.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = os.environ.get("QKV_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature of the base class
        pass


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on 127.0.0.1 (a free port); yield the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def launch(playwright):
    """Headless Chromium from ``CHROMIUM``, with no background network traffic."""
    return playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )


async def launch_async(playwright):
    """:func:`launch` for playwright's asynchronous API."""
    return await playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )


#: True once MathJax (if the page has it) has started.
MATH_STARTED = (
    "() => !window.MathJax || (window.MathJax.startup &&"
    " window.MathJax.startup.promise &&"
    " window.MathJax.startup.promise.then(() => true))"
)
#: A promise kept once MathJax has typeset the page (null without MathJax).
MATH_TYPESET = (
    "() => window.MathJax && window.MathJax.startup"
    " ? window.MathJax.startup.promise : null"
)


def open_page(
    browser,
    url: str,
    *,
    width: int = 1280,
    console: bool = True,
    ignore: str = "",
    before=None,
    **options,
):
    """A fresh context and page, loaded from ``url``: the page's script errors,
    and its console errors unless ``console`` is False (those that contain
    ``ignore``, when given, left out), collected in ``page.errors``.
    ``before(page)``, if given, runs before the page loads (to listen to its
    requests). Returns ``(context, page)``; ``options`` go to the context."""
    context = browser.new_context(viewport={"width": width, "height": 900}, **options)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(f"page error: {error}"))

    def on_console(message) -> None:
        if message.type == "error" and not (ignore and ignore in message.text):
            page.errors.append(message.text)

    if console:
        page.on("console", on_console)
    if before is not None:
        before(page)
    page.goto(url, wait_until="load")
    return context, page


def wait_for_math(page) -> None:
    """Wait until MathJax (if the page has it) has typeset, and the page is idle."""
    page.wait_for_function(MATH_STARTED, timeout=30_000)
    page.evaluate(MATH_TYPESET)
    page.wait_for_load_state("networkidle")


async def wait_for_math_async(page) -> None:
    """:func:`wait_for_math` for a page of playwright's asynchronous API."""
    await page.wait_for_function(MATH_STARTED, timeout=30_000)
    await page.evaluate(MATH_TYPESET)
    await page.wait_for_load_state("networkidle")
