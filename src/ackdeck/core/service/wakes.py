"""Wake operations for every door: list, drain, dismiss.

A wake delivery has one JSON shape (`Drained`) and one text
(`core.monitors.wakes.format_wake_text`),
whichever door delivers it: `wakes drain --json`, MCP `wakes_drain`, the Stop hook.
"""

from __future__ import annotations

from ackdeck.core.base.home import made_home, resolve_home
from ackdeck.core.base.names import check_name
from ackdeck.core.base.struct import Struct, derived
from ackdeck.core.monitors.reconcile import reconcile_lost
from ackdeck.core.monitors.results import Delivery, DrainResult, WakeRecord

# On the hot path (tests/test_layering.py): typing is for type checkers only, and pathlib too
# (a Stop hook drains with a str home; the MCP door resolves `Path` in `Wakes.skipped` itself:
# core/mcp/reply.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from collections.abc import Callable
    from pathlib import Path

    HomeArg = str | os.PathLike[str] | Path | None
    DeliverWakes = Callable[["Drained"], bool]


class Wakes(Struct):
    """Wake records (of one session, or of every session) as `wakes list` shows them; each
    record shows its own JSON (core/monitors/results.py: WakeRecord)."""

    session: str | None  # only this session's records; None: every session's
    wakes: list[WakeRecord]
    skipped: list[Path]  # malformed record files, kept on disk

    @derived
    def pending(self) -> int:
        """Items waiting for a drain here: lines plus exit / monitor-lost notices (a record for
        a session on another host waits for the fleet instead, not for a drain)."""
        return sum(r.pending for r in self.wakes if r.to_host is None)

    @derived
    def next(self) -> str | None:
        """What to do next, in words."""
        if not self.pending:
            if any(r.pending or r.on_the_way for r in self.wakes):
                return (
                    "The pending ones are for sessions on other hosts: the fleet's publishers "
                    "forward them (ackdeck fleet publish, an MCP server, the dashboard)."
                )
            return None
        return (
            "The pending ones are not delivered yet: call wakes_drain (CLI: ackdeck wakes "
            "drain) to receive them."
        )

    def text(self) -> str:
        """What every door says of these records (`wakes list`, MCP `wakes_list`): one line per
        record with its pending and delivered counts, its pending lines under it. Empty when
        there is no record."""
        from ackdeck.core.base.text import counted

        out: list[str] = []
        for r in self.wakes:
            notice = " + notice" if r.notice_pending else ""
            done = f"{r.delivered_total} delivered, {r.superseded_total} superseded"
            if r.to_host is not None:  # delivered on its host, after the fleet forwards it
                done = f"{r.forwarded_total or 0} forwarded to {r.to_host}"
                if r.on_the_way:
                    done += f" ({r.on_the_way} on the way)"
            origin = f" (from host {r.from_host})" if r.from_host is not None else ""
            out.append(
                f"{r.session}/{r.name}{origin}: {r.kind}, "
                f"{counted(len(r.lines), 'pending line')}{notice}, {done}, status {r.status}"
            )
            out += [f"  {x.text}" for x in r.lines]
        return "\n".join(out)


# A delivered wake and a drain are the monitors' own values (core/monitors/wakes.py); these
# names are the ones the doors use.
Delivered = Delivery
Drained = DrainResult


class Dismissed(Struct):
    session: str
    name: str
    dismissed: bool  # False: there was no record


def list_wakes(home: HomeArg, session: str | None = None) -> Wakes:
    """Wake records (of `session`, or of every session), without delivering anything. Dead
    supervisors are first reported as monitor-lost: the explicit reconcile step."""
    from ackdeck.core.monitors.wakes import scan_wakes

    h = resolve_home(home)
    if session is not None:
        check_name(session)
    reconcile_lost(h)
    records, skipped = scan_wakes(h, session)
    return Wakes(session, records, skipped)


def drain(
    home: HomeArg,
    session: str,
    *,
    settle_timeout: float = 2.0,
    deliver: DeliverWakes | None = None,
) -> Drained:
    """Deliver what `session` was not shown, then ack exactly that. With `deliver`, nothing is
    acked unless it answers True (the reader got it). The home is named as a string (see
    core/monitors/wakes.py `drain`), made and checked as resolve_home does."""
    from ackdeck.core.monitors import wakes

    h = made_home(home)
    check_name(session)
    if isinstance(settle_timeout, bool) or not 0 <= settle_timeout <= 60:
        from ackdeck.core.errors import InvalidInput

        raise InvalidInput("settle must be between 0 and 60 seconds")
    reconcile_lost(h)  # a dead supervisor is delivered as monitor-lost
    hand_over = None
    if deliver is not None:
        hand_over = lambda res: deliver(res.replace(session=session))  # noqa: E731
    done = wakes.drain(h, session, settle_timeout=settle_timeout, deliver=hand_over)
    return done.replace(session=session)


def dismiss(home: HomeArg, session: str, name: str) -> Dismissed:
    """Remove `session`'s record for `name` (a malformed one is kept: CorruptState)."""
    from ackdeck.core.monitors import wakes

    check_name(session)
    check_name(name, "process")
    return Dismissed(session, name, wakes.dismiss(resolve_home(home), session, name))
