"""`make bench`: run every bench/bench_*.py module's `main()` and print its table.

Each benchmark measures its own baseline in the same run (the physical floor or the tool a
user would use instead) and reports ratios, so results are comparable across machines.
Run one with `python -m bench NAME` (e.g. `python -m bench rooms`).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from pathlib import Path


def _summary(name: str) -> str:
    """The first line of a bench module's docstring, read without importing it (some import
    Textual or start servers)."""
    import ast

    path = Path(__file__).parent / f"{name}.py"
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = " ".join(doc.split("\n\n", 1)[0].split())
    if first.startswith("`") and ":" in first:
        first = first.split(":", 1)[1].strip()  # "`python -m bench NAME`: what it measures"
    return first if len(first) <= 64 else first[:63].rsplit(" ", 1)[0] + "…"


def usage(names: list[str]) -> str:
    rows = [f"  {n.removeprefix('bench_'):<12} {_summary(n)}" for n in names]
    return "\n".join(
        [
            "usage: python -m bench [NAME ...] [--quick]",
            "",
            "Runs every benchmark (or the NAMEs) and prints ratio tables against baselines",
            "measured in the same run. --quick: a short run, for benches that take it.",
            "",
            "benchmarks:",
            *rows,
        ]
    )


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    if "-h" in argv or "--help" in argv:
        print(usage(names))
        return 0
    unknown = [a for a in argv if not a.startswith("-") and f"bench_{a.removeprefix('bench_')}"
               not in names]  # fmt: skip
    if unknown:
        print(f"python -m bench: no benchmark {unknown[0]!r}\n\n{usage(names)}", file=sys.stderr)
        return 2
    flags = [a for a in argv if a.startswith("-")]  # e.g. --quick, for benches that take it
    argv = [a for a in argv if not a.startswith("-")]
    wanted = [f"bench_{a}" if not a.startswith("bench_") else a for a in argv]
    for name in names:
        if wanted and name not in wanted:
            continue
        print(f"\n== {name} ==", flush=True)
        module = importlib.import_module(f"bench.{name}")
        takes_flags = bool(inspect.signature(module.main).parameters)
        if flags and not takes_flags:
            print(f"({name} has no {' '.join(flags)}: its full run follows)", flush=True)
        module.main(flags) if flags and takes_flags else module.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
