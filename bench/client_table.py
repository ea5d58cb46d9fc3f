"""The docs' table of what each agent client shows its model whole, from a measurement.

`make test-clients-newest` runs
tests/test_agent_client_limits.py::test_the_largest_read_each_client_shows_whole_is_measured_for_the_docs
with ACKDECK_CLIENT_REPORT=FILE: each client case appends one JSON line (its package, version,
the largest probe shown whole and the smallest one cut). This writes those rows as a Markdown
table between the markers in docs/reference/agent-clients.md, and prints it.

Usage: python -m bench.client_table REPORT [DOC]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "reference" / "agent-clients.md"
BEGIN = "<!-- BEGIN client table: written by bench/client_table.py; do not edit -->"
END = "<!-- END client table -->"
LABELS = {
    "claude": "Claude Code",
    "codex": "Codex CLI (gpt-5.5)",
    "codex-other-model": "Codex CLI (other models)",
    "gemini": "Gemini CLI",
}
UNITS = {"claude": "characters", "codex": "bytes", "gemini": "characters"}


class BadReport(ValueError):
    """The report cannot be turned into a table (said in one line)."""


def parse(text: str, where: str) -> list[dict[str, object]]:
    """The report's rows (the last one of each case wins: a file appended to twice)."""
    rows: dict[str, dict[str, object]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise BadReport(f"{where} line {n} is not JSON") from None
        need = ("case", "client", "version", "whole", "cut", "pinned")
        if not isinstance(row, dict) or any(k not in row for k in need):
            raise BadReport(f"{where} line {n} lacks one of {', '.join(need)}")
        rows[str(row["case"])] = row
    if not rows:
        raise BadReport(f"{where} has no measurement (did the tests run with the client?)")
    order = list(LABELS)
    return [
        rows[c]
        for c in sorted(
            rows, key=lambda c: (c not in order, order.index(c) if c in order else 0, c)
        )
    ]


def _size(n: object) -> str:
    return f"{n:,}" if isinstance(n, int) and not isinstance(n, bool) else "beyond the probes"


def table(rows: list[dict[str, object]]) -> str:
    """The Markdown table of `rows` (pure)."""
    out = [
        "| client | version | shown whole up to | first size cut | as pinned |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        case, client = str(r["case"]), str(r["client"])
        unit = UNITS.get(client, "characters")
        pinned = r["pinned"] == [r["whole"], r["cut"]]
        out.append(
            f"| {LABELS.get(case, case)} | {r['version']} | {_size(r['whole'])} {unit} | "
            f"{_size(r['cut'])} {unit} | {'yes' if pinned else 'no: update the pins'} |"
        )
    return "\n".join(out)


def replace_table(doc: str, new: str, where: str) -> str:
    """`doc` with the text between the markers replaced by `new` (pure)."""
    start, end = doc.find(BEGIN), doc.find(END)
    if start < 0 or end < start:
        raise BadReport(f"{where} has no {BEGIN!r} … {END!r} markers")
    return doc[: start + len(BEGIN)] + "\n" + new + "\n" + doc[end:]


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: python -m bench.client_table REPORT [DOC]", file=sys.stderr)
        return 2
    report, doc = Path(argv[0]), Path(argv[1]) if len(argv) == 2 else DOC
    try:
        new = table(parse(report.read_text(), str(report)))
        doc.write_text(replace_table(doc.read_text(), new, str(doc)))
    except (OSError, BadReport) as exc:
        why = f"{exc.filename}: {exc.strerror}" if isinstance(exc, OSError) else str(exc)
        print(f"client_table: {why}", file=sys.stderr)
        return 1
    print(new)
    print(f"written into {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
