"""`ackdeck web` for real: a headless Chromium opens the page, the owner presses r and a, and
the room file shows that the ack removed exactly what the owner read (issue 10)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from ackdeck.core.rooms.file.room import Room
from ackdeck.tui.browser import chromium_page, find_chromium, open_dashboard, web_server
from ackdeck.tui.web import refusal, start_message
from tests.helpers.wait import WAIT, eventually

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)"
)


def owner_in_flight(room: Path) -> int | None:
    """The lines the owner's receipt covers (None: no receipt yet)."""
    session = Room(room).status().sessions.get("owner")
    return None if session is None else session.in_flight


def press_until(page, key: str, cond, what: str) -> None:
    """Press `key` until `cond` holds. A key that reaches the app before its first scan has
    selected a room does nothing, so one press is not enough on a busy machine; pressing
    again is harmless for `r` (a re-read) and `a` (a second ack is refused, removes nothing)."""
    deadline = time.monotonic() + WAIT
    while True:
        page.keyboard.press(key)
        retry = time.monotonic() + 15  # far longer than a press that lands takes
        while time.monotonic() < retry:
            if cond():
                return
            time.sleep(0.1)
        assert time.monotonic() < deadline, f"timed out waiting for {what}"


def test_web_binds_loopback_unless_told_and_says_so() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ackdeck.core.cli", "web", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "default: 127.0.0.1" in out and "--port" in out and "--room" in out
    assert "loopback only" in start_message("127.0.0.1", 8080)
    assert "anyone who can reach it" in start_message("0.0.0.0", 8080)


@pytest.mark.parametrize(
    ("host", "origin", "loopback", "websocket", "refused"),
    [
        # The page and its websocket, as the browser on this machine asks for them.
        ("127.0.0.1:8080", None, True, False, False),
        ("127.0.0.1:8080", "http://127.0.0.1:8080", True, True, False),
        ("localhost:8080", "http://localhost:8080", True, True, False),
        ("[::1]:8080", "http://[::1]:8080", True, True, False),
        # Through `ssh -L 9000:127.0.0.1:8080`: another local port, still loopback.
        ("127.0.0.1:9000", "http://127.0.0.1:9000", True, True, False),
        # Another site's page opening a websocket to the dashboard (cross-site hijacking).
        ("127.0.0.1:8080", "http://127.0.0.1:5173", True, True, True),
        ("127.0.0.1:8080", "https://evil.example", True, True, True),
        ("127.0.0.1:8080", "null", True, True, True),
        ("127.0.0.1:8080", None, True, True, True),
        # DNS rebinding: the attacker's name resolving to 127.0.0.1 is same-origin with itself.
        ("evil.example:8080", None, True, False, True),
        ("evil.example:8080", "http://evil.example:8080", True, True, True),
        # Bound to 0.0.0.0 (--host): any address the browser used, but only its own page.
        ("server.lan:8080", None, False, False, False),
        ("SERVER.lan:8080", "http://server.lan:8080", False, True, False),
        ("server.lan:8080", "http://evil.example", False, True, True),
    ],
)
def test_only_the_dashboards_own_page_may_drive_it(
    host: str, origin: str | None, loopback: bool, websocket: bool, refused: bool
) -> None:
    why = refusal(host, origin, loopback=loopback, websocket=websocket)
    assert (why is not None) == refused, why


def test_web_rejects_a_bad_session_before_serving(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "ackdeck.core.cli", "web", "--session", "../x", "--port", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert res.returncode != 0
    assert len(res.stderr.strip().splitlines()) == 1


def test_web_on_a_port_in_use_says_so_in_one_line_and_never_that_it_serves() -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        res = subprocess.run(
            [sys.executable, "-m", "ackdeck.core.cli", "web", "--port", str(port)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=WAIT,
        )
    assert res.returncode != 0
    assert res.stderr.splitlines() == [
        f"ackdeck: error: cannot serve on 127.0.0.1 port {port}: Address already in use"
    ]
    assert res.stdout == ""


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--port", "70000"], "port 70000: ports are 0-65535"),
        (["--port", "-1"], "port -1: ports are 0-65535"),
        (["--host", "no-such-host.invalid"], "Name or service not known"),
    ],
)
def test_web_on_an_impossible_address_says_why_in_one_line(args: list[str], why: str) -> None:
    # A port out of range was a traceback (bind's OverflowError); a name that does not
    # resolve said "Unknown error -2".
    res = subprocess.run(
        [sys.executable, "-m", "ackdeck.core.cli", "web", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert res.returncode != 0
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ackdeck: error: cannot serve on "), lines
    assert why in lines[0]
    assert res.stdout == ""


def test_web_on_port_0_prints_the_port_it_serves_on() -> None:
    # "--port 0" said "serving the dashboard on http://127.0.0.1:0": no browser opens that.
    import re
    import urllib.request

    proc = subprocess.Popen(
        [sys.executable, "-m", "ackdeck.core.cli", "web", "--port", "0"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # blocks until the line or the process ends
        found = re.search(r"http://127\.0\.0\.1:(\d+) ", first)
        assert found, first
        port = int(found.group(1))
        assert port != 0

        def fetched() -> bytes:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=WAIT) as r:
                    return r.read()
            except OSError:
                return b""

        page = eventually(fetched, what="the printed port to answer", every=0.2)
        assert b"ackdeck" in page
    finally:
        proc.terminate()
        proc.wait(WAIT)


@needs_chromium
def test_owner_reads_and_acks_in_a_browser_and_the_file_keeps_the_rest(tmp_path: Path) -> None:
    assert CHROMIUM is not None
    room = tmp_path / "alerts.txt"
    room.write_bytes(b"".join(f"alert {i}\n".encode() for i in range(12)))
    home = tmp_path / "home"
    home.mkdir()
    with web_server(["--room", str(room), "--home", str(home)]) as (url, log):
        assert "loopback only" in log()  # it says where it listens, and that it is local
        with chromium_page(CHROMIUM) as page:
            open_dashboard(page, url)
            # The page has the dashboard's first bytes: keys reach the app from now on.
            # A read is what was on screen (issue 20): a press before the first paint reads
            # nothing, so press until the read covers the 12 lines the page shows.
            press_until(page, "r", lambda: owner_in_flight(room) == 12, "the read")
            assert Room(room).status().sessions["owner"].in_flight == 12
            # A shell poller appends after the owner's read.
            subprocess.run(["sh", "-c", f'printf "late 1\\nlate 2\\n" >> "{room}"'], check=True)
            press_until(page, "a", lambda: Room(room).status().acked_total > 0, "the ack")
            assert room.read_bytes() == b"late 1\nlate 2\n"
            st = Room(room).status()
            assert (st.pending, st.acked_total, st.preserved_total) == (2, 12, 2)
            shot = tmp_path / "web.png"
            page.screenshot(path=str(shot))
            assert shot.stat().st_size > 10_000  # a drawn dashboard, not a blank page


ATTACK_PAGE = """<!doctype html><title>waiting</title><script>
// A page of another site, open in the owner's browser: browsers let it open a websocket to
// any address, so it tries to drive the dashboard (ack all, then yes) as the owner.
const ws = new WebSocket("ws://127.0.0.1:%(port)d/ws?width=120&height=35");
let opened = false;
ws.onopen = () => {
  opened = true;
  document.title = "open";
  setInterval(() => {
    ws.send(JSON.stringify(["stdin", "A"]));
    setTimeout(() => ws.send(JSON.stringify(["stdin", "y"])), 400);
  }, 1000);
};
ws.onclose = () => { if (!opened) document.title = "refused"; };
</script>"""


@needs_chromium
def test_a_page_of_another_site_cannot_drive_the_dashboard(tmp_path: Path) -> None:
    """Cross-site websocket hijacking: loopback binding does not stop a page the owner opens
    elsewhere from connecting to ws://127.0.0.1:PORT; the server must refuse other origins."""
    import functools
    import http.server
    import threading

    assert CHROMIUM is not None
    room = tmp_path / "alerts.txt"
    room.write_bytes(b"".join(f"alert {i}\n".encode() for i in range(12)))
    before = room.read_bytes()
    home = tmp_path / "home"
    home.mkdir()
    site = tmp_path / "site"
    site.mkdir()
    with web_server(["--room", str(room), "--home", str(home)]) as (url, _log):
        port = int(url.rsplit(":", 1)[1])
        (site / "attack.html").write_text(ATTACK_PAGE % {"port": port})
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
        other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=other.serve_forever, daemon=True)
        thread.start()
        try:
            with chromium_page(CHROMIUM) as page:
                page.goto(f"http://127.0.0.1:{other.server_address[1]}/attack.html")
                eventually(
                    lambda: page.title() == "refused" or Room(room).status().acked_total > 0,
                    what="the attack page to be refused or to ack",
                )
                assert page.title() == "refused"
        finally:
            other.shutdown()
            other.server_close()
    assert room.read_bytes() == before
    assert Room(room).status().acked_total == 0


def test_the_page_names_ackdeck_and_the_machine_and_focuses_the_terminal() -> None:
    from ackdeck.tui.web import with_title_and_focus

    page = with_title_and_focus("<html><head><link></head><body></body></html>", "db<3>")
    assert page.startswith("<html><head><title>ackdeck · db&lt;3&gt;</title><script>")
    assert ".textual-terminal textarea" in page and "focus(" in page
    assert page.endswith("<link></head><body></body></html>")


@needs_chromium
def test_the_page_takes_keys_on_load_without_a_click_and_draws_no_box(tmp_path: Path) -> None:
    """Issue 20: the page looked dead until clicked (keys ignored), had no title, and its
    header icon drew as an empty box. Nothing here clicks: open, then press keys."""
    import socket

    from ackdeck.tui.app import make_app
    from ackdeck.tui.browser import glyphs_drawn_as_boxes
    from ackdeck.tui.scenes import full_scene
    from ackdeck.tui.testing import quiet_config, screen_text, settle

    assert CHROMIUM is not None
    room = tmp_path / "alerts.txt"
    room.write_bytes(b"".join(f"alert {i}\n".encode() for i in range(5)))
    home = tmp_path / "home"
    home.mkdir()

    # Every character the dashboard draws in a full scene (tables, sparklines, marks, the
    # header's icon), as a Pilot run paints it.
    scene = full_scene(tmp_path / "scene", time.time())

    async def painted_text() -> str:
        app = make_app(quiet_config(scene.rooms, home=scene.home), clock=scene.clock)
        async with app.run_test(size=(120, 35)) as pilot:
            await settle(pilot)
            await pilot.press("r")
            await settle(pilot)
            return screen_text(app)

    import asyncio

    drawn = sorted({c for c in asyncio.run(painted_text()) if ord(c) > 127})
    assert "◆" in drawn  # the header's icon is among them

    with web_server(["--room", str(room), "--home", str(home)]) as (url, _log):
        with chromium_page(CHROMIUM) as page:
            open_dashboard(page, url)  # no click
            assert page.title() == f"ackdeck · {socket.gethostname()}"
            # The terminal's input has the focus: keys go to the dashboard.
            page.wait_for_function(
                "() => document.activeElement?.closest('.textual-terminal') != null",
                timeout=WAIT * 1000,
            )
            # Textual's footer lists the keys before any key or click (the app starts blurred
            # in a browser, and a blurred app left its footer blank): the terminal's last row
            # draws text, while a row of the lines panel below the room's 5 lines draws none.
            box = page.locator(".textual-terminal").bounding_box()
            assert box is not None

            def drawn_bytes(y: float) -> int:  # a strip's PNG: text compresses far worse
                clip = {"x": box["x"], "y": box["y"] + y, "width": box["width"] / 2, "height": 10}
                return len(page.screenshot(clip=clip))

            eventually(
                lambda: drawn_bytes(box["height"] - 14) > 4 * drawn_bytes(box["height"] * 0.6),
                what="the footer's keys",
            )
            # A read counts what was on screen: a press before the first paint reads 0.
            press_until(page, "r", lambda: owner_in_flight(room) == 5, "the read")
            # The check can tell a box: Textual's old icon (in no Debian font) is one.
            assert glyphs_drawn_as_boxes(page, ["⭘"]) == ["⭘"]
            assert glyphs_drawn_as_boxes(page, drawn) == []
