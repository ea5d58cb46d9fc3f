"""The service's views for the dashboard: a room's lines paged through its reference, and the
scan's counters, which must be the numbers the dashboard's own scan shows today."""

from __future__ import annotations

from pathlib import Path

from ackdeck.core.service.deck import Deck
from ackdeck.core.service.refs import absolute_spec, parse_room, room_spec
from ackdeck.core.service.scan import scan_room
from ackdeck.tui import state


def test_a_rooms_pages_catch_up_on_appends_and_start_over_after_an_ack(tmp_path: Path) -> None:
    path = tmp_path / "inbox.txt"
    deck = Deck(session="agent", rooms=[path])
    ref = deck.room()
    for n in range(3):
        deck.push(ref, f"line {n}")
    pages = ref.lines()
    assert pages.first_page() is True
    assert [pages.line(n) for n in range(pages.count)] == ["line 0", "line 1", "line 2"]
    deck.push(ref, "line 3")
    assert pages.catch_up() is True and pages.count == 4
    deck.read(ref)
    deck.ack(ref)  # renames a new file over the room: the pages held are no longer its lines
    assert pages.catch_up() is False
    fresh = ref.lines()
    fresh.load_all()
    assert fresh.count == 0


def _counts(st: object) -> dict[str, object]:
    """A status without the time it was taken."""
    return {k: getattr(st, k) for k in type(st)._fields if k != "checked_at"}  # type: ignore[attr-defined]


def test_the_scan_view_counts_what_the_dashboard_scan_counts(tmp_path: Path) -> None:
    path = tmp_path / "inbox.txt"
    deck = Deck(session="agent", rooms=[path])
    ref = deck.room()
    deck.push(ref, "one")
    deck.read(ref)
    deck.push(ref, "two")
    mine = scan_room(ref, "inbox.txt")
    theirs = state.scan_room(path, "inbox.txt")
    assert (_counts(mine.status), mine.error, mine.mtime) == (
        _counts(theirs.status),
        theirs.error,
        theirs.mtime,
    )
    assert mine.status is not None and mine.status.sessions["agent"].unread == 1
    missing = tmp_path / "missing.txt"
    gone = scan_room(parse_room(missing), "missing.txt")
    assert gone.status is not None and not gone.status.exists
    assert _counts(gone.status) == _counts(state.scan_room(missing, "missing.txt").status)
    assert (gone.error, gone.mtime) == (None, None)


def test_a_room_spec_keeps_a_url_as_text_and_a_path_as_a_path(tmp_path: Path) -> None:
    assert room_spec("redis://localhost/6/inbox") == "redis://localhost/6/inbox"
    assert room_spec("inbox.txt") == Path("inbox.txt")
    assert absolute_spec("redis://h/inbox") == "redis://h/inbox"
    assert absolute_spec("inbox.txt") == str(Path("inbox.txt").absolute())


def test_the_home_scan_of_an_empty_home_shows_nothing_and_says_nothing(tmp_path: Path) -> None:
    from ackdeck.core.service.scan import run_info, scan_home

    found = scan_home(tmp_path)
    assert (found.runs, found.wakes, found.errors) == ([], [], [])
    assert run_info(tmp_path, "build", "no-such-run") is None


def test_the_home_scan_notes_a_damaged_wake_record_and_keeps_it(tmp_path: Path) -> None:
    from ackdeck.core.service.scan import scan_home
    from ackdeck.tui.state import scan as dashboard_scan

    record = tmp_path / "wakes" / "agent" / "build.json"
    record.parent.mkdir(parents=True)
    record.write_text("{not json")
    found = scan_home(tmp_path)
    assert found.errors == dashboard_scan(tmp_path, [], clock=lambda: 0.0).errors
    assert found.errors and "damaged wake record" in found.errors[0]
    assert record.exists()
