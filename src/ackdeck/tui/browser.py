"""Drive `ackdeck web` in a real headless Chromium (Debian's `chromium`, through Playwright).

Used by the web test and by `make screenshots` (the PNG of the web dashboard). Playwright is a
test dependency and is imported only here, inside the functions.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def find_chromium() -> str | None:
    return shutil.which("chromium") or (
        "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"ackdeck web exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"ackdeck web did not listen on port {port}")


@contextmanager
def web_server(tui_args: Sequence[str], *, timeout: float = 60.0) -> Iterator[tuple[str, Any]]:
    """`ackdeck web` on a free loopback port; yields (url, log) where `log()` returns what it
    printed so far. Stopped on exit. Output goes to a file: a pipe nobody drains could fill up
    and stall the server."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ackdeck.core.cli", "web", "--port", str(port), *tui_args],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

        def read_log() -> str:
            log.seek(0)
            return log.read().decode(errors="replace")

        try:
            _wait_listening(port, proc, timeout)
            yield f"http://127.0.0.1:{port}", read_log
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextmanager
def chromium_page(executable: str, *, width: int = 1400, height: int = 900) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            yield page
        finally:
            browser.close()


def open_dashboard(page: Any, url: str, *, timeout: float = 60.0) -> None:
    """Load the page and wait for the dashboard's first bytes. No click: the page focuses
    the terminal itself on load (tui/web.py), as an owner opening it expects."""
    page.goto(url, timeout=timeout * 1000)
    # textual-serve marks the body once the dashboard process sent its first bytes.
    page.wait_for_selector("body.-first-byte", timeout=timeout * 1000)
    # On a busy machine the terminal element can be laid out after the first byte arrived.
    page.locator(".textual-terminal").wait_for(state="visible", timeout=timeout * 1000)


# Does each character draw as a glyph of the page's terminal fonts (or a fallback font), or
# as the box a missing glyph draws? Each is drawn on a canvas and compared with two code
# points no font has (which must draw alike, or the comparison proves nothing).
GLYPH_CHECK = r"""([family, chars]) => {
  const canvas = document.createElement("canvas");
  canvas.width = 64; canvas.height = 64;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  const draw = (c) => {
    ctx.clearRect(0, 0, 64, 64);
    ctx.fillStyle = "#000";
    ctx.font = "32px " + family;
    ctx.fillText(c, 8, 44);
    return Array.from(ctx.getImageData(0, 0, 64, 64).data).join(",");
  };
  const missing = draw("\u{10FFFD}");
  const boxes = chars.filter((c) => draw(c) === missing);
  return { calibrated: missing === draw("\u{10FFFC}"), boxes };
}"""


# The font stack textual-serve gives its terminal (static/js/textual.js; it draws on a canvas,
# so no element carries it). Roboto Mono comes from Google's servers: offline, the rest.
TERMINAL_FONTS = "'Roboto Mono', Monaco, 'Courier New', monospace"


def glyphs_drawn_as_boxes(page: Any, chars: Sequence[str]) -> list[str]:
    """The characters of `chars` that the page's terminal font stack draws as a box."""
    got = page.evaluate(GLYPH_CHECK, [TERMINAL_FONTS, list(chars)])
    if not got["calibrated"]:
        raise RuntimeError("two missing code points drew differently: cannot tell boxes")
    return list(got["boxes"])


def settled_screenshot(page: Any, path: Path, *, timeout: float = 60.0) -> None:
    """Save a screenshot once two consecutive frames are identical (the dashboard has drawn
    and stopped changing), or the newest one after `timeout`."""
    deadline = time.monotonic() + timeout
    previous = b""
    while True:
        shot = page.screenshot()
        if shot == previous or time.monotonic() > deadline:
            break
        previous = shot
        page.wait_for_timeout(300)
    path.write_bytes(shot)
