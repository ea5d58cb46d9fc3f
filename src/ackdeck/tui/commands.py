"""Command palette (ctrl+p): commands built from the dashboard's current state."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.fuzzy import Matcher

if TYPE_CHECKING:
    from .host import Host

Command = tuple[str, str, Callable[[], object]]


class DashboardCommands(Provider):
    """One command per room action, process and wake record that exists right now (another
    host's too, with a fleet)."""

    def _commands(self) -> list[Command]:
        from .host import host_of

        app = host_of(self)
        main = app.main
        out: list[Command] = []
        snap = main.snapshot
        if snap is not None:
            for r in snap.rooms:
                for verb, action, help_text in (
                    ("Show", None, "show its lines"),
                    ("Read", "read", "read it as the owner"),
                    ("Ack", "ack", "ack what the owner read"),
                    ("Ack all in", "ack_all", "ack every complete line (asks first)"),
                    ("Push into", "push", "append one line"),
                ):
                    out.append(
                        (
                            f"{verb} room {r.label}",
                            help_text,
                            partial(_room_action, app, r.key, action),
                        )
                    )
            for run in snap.runs:
                out.append(
                    (
                        f"Output of {run.name}",
                        f"{run.status}; read as owner",
                        partial(app.open_output, run.name),
                    )
                )
            for w in snap.wakes:
                out.append(
                    (
                        f"Dismiss wake {w.session}/{w.name}",
                        f"{w.kind}, {w.pending} pending",
                        partial(_dismiss, app, w.session, w.name),
                    )
                )
        # Another host's rows (a fleet): read-only here, as their keys are; the command says
        # which host each lives on and what to run there.
        remote_runs, remote_wakes = main.remote_rows
        for rr in remote_runs:
            out.append(
                (
                    f"Output of {rr.name} on {rr.host}",
                    f"{rr.status}{'' if rr.live else ' (last known)'}; read it on {rr.host}",
                    partial(main.output_elsewhere, rr.host, rr.name),
                )
            )
        for rw in remote_wakes:
            out.append(
                (
                    f"Dismiss wake {rw.session}/{rw.name} on {rw.host}",
                    f"{rw.kind}, {rw.pending} pending; dismiss it on {rw.host}",
                    partial(main.dismiss_elsewhere, rw.host, rw.session, rw.name),
                )
            )
        out.append(
            (
                "Filter lines",
                "show only lines containing some text",
                partial(app.run_action, "screen.filter"),
            )
        )
        out.append(("Help", "every key binding", app.action_help))
        # Quit comes from Textual's system commands (listed once).
        return out

    async def discover(self) -> Hits:
        for text, help_text, command in self._commands():
            yield DiscoveryHit(Content(text), command, text=text, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help_text, command in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, _highlight(matcher, text), command, text=text, help=help_text)


def _highlight(matcher: Matcher, text: str) -> Content:
    """`matcher.highlight(text)` over the text as written: that one reads its candidate as
    markup, and commands name rooms, whose file names may hold `[` (a `[link=x:y]` in one
    stopped the dashboard with a MarkupError when the palette opened)."""
    content = Content(text)
    score, offsets = matcher.fuzzy_search.match(matcher.query, text)
    if score:
        for at in offsets:
            if not text[at].isspace():
                content = content.stylize(matcher.match_style, at, at + 1)
    return content


def _room_action(app: Host, key: str, action: str | None) -> None:
    main = app.main
    main.select_room(key)
    if action is not None:
        main.run_action_now(action)


def _dismiss(app: Host, session: str, name: str) -> None:
    app.main.dismiss_wake(session, name)
