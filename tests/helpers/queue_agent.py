"""An agent working a queue room, as a real process (tests/test_queue_races.py):

    python -m tests.helpers.queue_agent ROOM SESSION LOG LEASE OVERRUN [--no-fencing]

It claims a task, appends `start TASK TOKEN` to LOG, works (a random time under half the
lease and 0.1 s; with probability OVERRUN one and a half leases, so its lease ends and the line is
claimed again meanwhile), calls done and appends `done TASK TOKEN` once done was accepted
(`noop` when a done it sent before a lost reply or a server restart had been made). A server
that is down (a redis restart) is waited for: claims and dones are sent again.
It stops when nothing is claimable and the file LOG.stop exists. `--no-fencing` runs the
queue without its fencing check, to show what the check prevents. ROOM is a file path or a
redis:// URL.
"""

from __future__ import annotations

import os
import random
import sys
import time

from ackdeck.core.errors import RoomUnavailable
from ackdeck.core.rooms.queue import TokenRefused
from tests.helpers.queues import open_queue


def note(log: str, text: str) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, text.encode() + b"\n")  # one write: lines from several agents never mix
    finally:
        os.close(fd)


def main() -> None:
    room, session, log, lease_s, overrun_s = sys.argv[1:6]
    lease, overrun = float(lease_s), float(overrun_s)
    queue = open_queue(room, fencing="--no-fencing" not in sys.argv)
    while True:
        try:
            got = queue.claim(session, lease)
        except RoomUnavailable:  # the server is down (a restart): a worker tries again
            time.sleep(0.05)
            continue
        if not got.claimed:
            if os.path.exists(log + ".stop"):
                return
            time.sleep(0.01)  # a worker's poll for new work, not a test's synchronisation
            continue
        assert got.line is not None and got.token is not None
        task = got.line.decode().strip()
        note(log, f"start {task} {got.token}")
        short = random.uniform(0, min(lease / 2, 0.1))
        work = lease * 1.5 if random.random() < overrun else short
        time.sleep(work)
        while True:
            try:
                mode = queue.update(got.token, "done").mode
            except TokenRefused:
                mode = "refused"
            except RoomUnavailable:
                # The server is down, or the outcome is unknown: the same done again (a done
                # already made says noop, one never made is made now).
                time.sleep(0.05)
                continue
            break
        note(log, f"{mode} {task} {got.token}")  # done, noop (made before a lost reply), refused


if __name__ == "__main__":
    main()
