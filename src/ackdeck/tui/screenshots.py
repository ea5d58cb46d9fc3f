"""`make screenshots`: regenerate the SVG screenshots shown in the README and the docs, and a PNG
of the web dashboard (`ackdeck web` in headless Chromium).

    python -m ackdeck.tui.screenshots screenshots [--text]

Each shot is a deterministic scene (tui/scenes.py) built in a temporary directory through core,
opened with the test config (no clock, no watchers), driven by keys, and saved as SVG. The
README's pictures use the showcase scene (every panel populated); `sequence-*.svg` are three
pictures of one session: the owner reads a room, a producer appends a line, the owner's ack
removes what was read and keeps the late line. `--text` also prints each screen as plain text.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .app import make_app
from .scenes import Scene, apply_rates, build_flood, full_scene, showcase_scene
from .testing import feed_change, quiet_config, screen_text, settle


@dataclass(frozen=True)
class Shot:
    name: str
    size: tuple[int, int]
    scene: str  # "showcase" | "full" | "flood" | "empty"
    keys: tuple[str, ...] = ()
    action: Callable[[Any], None] | None = None
    caption: str = ""


SHOTS = [
    Shot(
        "main",
        (120, 35),
        "showcase",
        caption="Rooms, the selected room's lines (owner's unacked read marked ▌), processes "
        "and wake records",
    ),
    Shot("main-80x24", (80, 24), "showcase", caption="The same at 80×24"),
    Shot(
        "flood",
        (120, 36),
        "flood",
        ("tab", "G"),
        caption="A room flooded with 1,000,000 lines, scrolled to the newest",
    ),
    Shot(
        "output",
        (120, 30),
        "full",
        action=lambda app: app.open_output("tests"),
        caption="A process's output, read as the owner",
    ),
    Shot("ack-all", (100, 30), "full", ("A",), caption="Ack all acks the snapshot it shows"),
    Shot("help", (120, 44), "full", ("?",), caption="Every key binding"),
]


# The read, the late line, the ack that keeps it: (file name, what happens before the picture).
SEQUENCE_SIZE = (100, 30)
SEQUENCE_ROOM = 1  # owner.txt, the second row of the showcase's rooms
LATE_LINE = "[2027-01-15T07:59:58Z] [owner] dana: and cc me on the cart fix"


async def _take_sequence(scene: Scene, out: Path, text: bool) -> list[Path]:
    app = make_app(quiet_config(scene.rooms, home=scene.home), clock=scene.clock)
    apply_rates(app, scene)
    room = scene.rooms[SEQUENCE_ROOM]
    written: list[Path] = []

    async def shoot(name: str) -> None:
        await _painted(pilot)
        app.save_screenshot(filename=f"{name}.svg", path=str(out))
        written.append(out / f"{name}.svg")
        if text:
            print(f"--- {name} ---")
            print(screen_text(app))

    async with app.run_test(size=SEQUENCE_SIZE) as pilot:
        await _painted(pilot)
        for _ in range(SEQUENCE_ROOM):
            await pilot.press("j")
        await pilot.press("r")
        await shoot("sequence-1-read")
        # A poller that knows nothing about ackdeck appends while the owner reads.
        with room.open("ab") as f:
            f.write(LATE_LINE.encode() + b"\n")
        await feed_change(pilot)
        await shoot("sequence-2-late")
        await pilot.press("a")
        await feed_change(pilot)
        await shoot("sequence-3-ack")
    return written


def _flood_scene(base: Path, now: float) -> Scene:
    path = build_flood(base)
    home = base / "home"
    home.mkdir(exist_ok=True)
    samples = [(61.0, 0)]
    total = 0
    for i, n in enumerate([4, 9, 12, 6, 8, 15, 11, 7, 9, 10, 5, 4]):
        total += n * 10_000
        samples.append((5.0 * (11 - i) + 0.5, total))
    return Scene([path], home, {str(path): samples}, now=now)


async def _painted(pilot: Any) -> None:
    # Settled, then a few frames so every widget has re-measured and repainted.
    await settle(pilot)
    await pilot.pause(0.1)
    await settle(pilot)


async def _take(shot: Shot, scene: Scene, out: Path, text: bool) -> None:
    app = make_app(quiet_config(scene.rooms, home=scene.home), clock=scene.clock)
    apply_rates(app, scene)
    async with app.run_test(size=shot.size) as pilot:
        await _painted(pilot)
        if shot.action is not None:
            shot.action(app)
            await _painted(pilot)
        for key in shot.keys:
            await pilot.press(key)
            await _painted(pilot)
        app.save_screenshot(filename=f"{shot.name}.svg", path=str(out))
        if text:
            print(f"--- {shot.name} ---")
            print(screen_text(app))


def web_shot(scene: Scene, out: Path) -> Path | None:
    """The web dashboard (`ackdeck web`) in headless Chromium, as a PNG."""
    from .browser import (
        chromium_page,
        find_chromium,
        open_dashboard,
        settled_screenshot,
        web_server,
    )

    chromium = find_chromium()
    if chromium is None:
        print("skipped web-dashboard.png: chromium is not installed", file=sys.stderr)
        return None
    args = ["--home", str(scene.home)] if scene.home is not None else []
    for room in scene.rooms:
        args += ["--room", str(room)]
    target = out / "web-dashboard.png"
    with web_server(args) as (url, _log), chromium_page(chromium, width=1280, height=800) as page:
        open_dashboard(page, url)
        settled_screenshot(page, target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ackdeck.tui.screenshots")
    parser.add_argument("outdir", nargs="?", default="screenshots")
    parser.add_argument("--text", action="store_true", help="also print each screen as text")
    parser.add_argument("--only", action="append", default=[], help="shot name(s) to take")
    args = parser.parse_args(argv)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ackdeck-shots-") as tmp:
        base = Path(tmp)
        now = time.time()
        scenes: dict[str, Scene] = {}
        for shot in SHOTS:
            if args.only and shot.name not in args.only:
                continue
            if shot.scene not in scenes:
                d = base / shot.scene
                d.mkdir()
                if shot.scene == "showcase":
                    scenes["showcase"] = showcase_scene(d, now)
                elif shot.scene == "full":
                    scenes["full"] = full_scene(d, now)
                elif shot.scene == "flood":
                    scenes["flood"] = _flood_scene(d, now)
                else:
                    (d / "home").mkdir()
                    scenes[shot.scene] = Scene([], d / "home", now=now)
            asyncio.run(_take(shot, scenes[shot.scene], out, args.text))
            print(f"wrote {out / (shot.name + '.svg')}", file=sys.stderr)
        if not args.only or "sequence" in args.only:
            d = base / "sequence"
            d.mkdir()
            for path in asyncio.run(_take_sequence(showcase_scene(d, now), out, args.text)):
                print(f"wrote {path}", file=sys.stderr)
        if not args.only or "web" in args.only:
            d = base / "web"
            d.mkdir()
            png = web_shot(showcase_scene(d, now), out)
            if png is not None:
                print(f"wrote {png}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
