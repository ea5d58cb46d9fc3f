"""Where the code under test lives, for tests and the processes they start."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The package's source (a src/ layout: no `ackdeck` at the top of the repository) and what a
# subprocess a test starts needs on its path: this checkout's package, and `tests` itself.
SRC = REPO / "src"
PKG = SRC / "ackdeck"
PATHS = os.pathsep.join([str(SRC), str(REPO)])
