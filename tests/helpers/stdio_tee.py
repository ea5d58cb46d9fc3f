"""Run an MCP stdio server and log every line its client sends (to learn what a client says,
e.g. its name in `initialize` or in a request's `_meta`).

Usage: python -m tests.helpers.stdio_tee LOG COMMAND...
"""

from __future__ import annotations

import subprocess
import sys


def main(log_path: str, argv: list[str]) -> int:
    server = subprocess.Popen(argv, stdin=subprocess.PIPE)
    assert server.stdin is not None
    with open(log_path, "ab", buffering=0) as log:
        for line in sys.stdin.buffer:
            log.write(line)
            try:
                server.stdin.write(line)
                server.stdin.flush()
            except BrokenPipeError:
                break
    server.stdin.close()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
