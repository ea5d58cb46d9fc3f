"""Fault injection for the kill -9 tests (tests/test_room_crash.py); inert in normal use.

ACKDECK_TEST_PAUSE_AT=step[,step...] makes an acking process stop at those steps: it writes the
step name to ACKDECK_TEST_PAUSE_FILE and sleeps until a test deletes that file (continue) or
kills it (kill -9 at exactly that point). Read once at import; when unset, `pause` is one
truthiness test of an empty frozenset. The steps are listed in core/rooms/file/ack.py; the
fleet's wake exchange has two more, `fleet-batched` (core/monitors/forwarding.py) and
`fleet-imported` (core/service/fleet/hosts.py); a message's re-delivery one,
`redeliver-after-push` (core/service/claude_messages.py).
"""

from __future__ import annotations

import os

_PAUSE_AT = frozenset(s for s in os.environ.get("ACKDECK_TEST_PAUSE_AT", "").split(",") if s)
_PAUSE_FILE = os.environ.get("ACKDECK_TEST_PAUSE_FILE", "")


def pause(step: str) -> None:
    if _PAUSE_AT and step in _PAUSE_AT:
        _pause_here(step)


def _pause_here(step: str) -> None:
    import time  # here, as pathlib: only a test's paused process gets this far
    from pathlib import Path

    marker = Path(_PAUSE_FILE)
    tmp = marker.with_name(marker.name + ".tmp")
    tmp.write_text(step)
    os.replace(tmp, marker)  # the test never sees a half-written step name
    while marker.exists():
        time.sleep(0.005)
