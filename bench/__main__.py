"""`make bench`: run every bench/bench_*.py module's `main()` and print its table.

Each benchmark measures its own baseline in the same run (the physical floor or the tool a
user would use instead) and reports ratios, so results are comparable across machines.
Run one with `python -m bench NAME` (e.g. `python -m bench rooms`).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    flags = [a for a in argv if a.startswith("-")]  # e.g. --quick, for benches that take it
    argv = [a for a in argv if not a.startswith("-")]
    wanted = [f"bench_{a}" if not a.startswith("bench_") else a for a in argv]
    for name in names:
        if wanted and name not in wanted:
            continue
        print(f"\n== {name} ==", flush=True)
        module = importlib.import_module(f"bench.{name}")
        module.main(flags) if flags else module.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
