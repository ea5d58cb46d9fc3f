"""`make screenshots`: regenerate the SVG screenshots shown in the README, and a PNG of the web
dashboard (`ackdeck web` in headless Chromium).

    python -m ackdeck.tui.screenshots screenshots [--text]

Each shot is a deterministic scene (tui/scenes.py) built in a temporary directory through core,
opened with the test config (no clock, no watchers), driven by keys, and saved as SVG. `--text`
also prints each screen as plain text.
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
from .scenes import Scene, apply_rates, build_flood, full_scene
from .testing import quiet_config, screen_text, settle


@dataclass(frozen=True)
class Shot:
    name: str
    size: tuple[int, int]
    scene: str  # "full" | "flood" | "empty"
    keys: tuple[str, ...] = ()
    action: Callable[[Any], None] | None = None
    caption: str = ""


SHOTS = [
    Shot(
        "main",
        (120, 35),
        "full",
        ("j",),
        caption="Rooms, the selected room's lines (owner's unacked read marked ▌), processes "
        "and wake records",
    ),
    Shot("main-80x24", (80, 24), "full", caption="The same at 80×24"),
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
                if shot.scene == "full":
                    scenes["full"] = full_scene(d, now)
                elif shot.scene == "flood":
                    scenes["flood"] = _flood_scene(d, now)
                else:
                    (d / "home").mkdir()
                    scenes[shot.scene] = Scene([], d / "home", now=now)
            asyncio.run(_take(shot, scenes[shot.scene], out, args.text))
            print(f"wrote {out / (shot.name + '.svg')}", file=sys.stderr)
        if not args.only or "web" in args.only:
            d = base / "web"
            d.mkdir()
            png = web_shot(full_scene(d, now), out)
            if png is not None:
                print(f"wrote {png}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
