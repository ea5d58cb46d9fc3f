"""One contender of a claim race (tests/test_queue_races.py), as a real process:

    python -m tests.helpers.queue_racer ROOM SESSION GATE

ROOM is a file path or a redis:// URL.

It opens everything a claim needs, prints `ready`, waits for the file GATE to exist (so all
contenders claim at the same moment, none favoured by its start-up), claims once and prints
the claim's JSON."""

from __future__ import annotations

import json
import os
import sys
import time

from tests.helpers.queues import open_queue


def main() -> None:
    room, session, gate = sys.argv[1:4]
    queue = open_queue(room)
    print("ready", flush=True)
    while not os.path.exists(gate):
        time.sleep(0.001)  # the start line of the race: as short as the scheduler allows
    print(json.dumps(queue.claim(session, 60).to_json()), flush=True)


if __name__ == "__main__":
    main()
