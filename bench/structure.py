"""`python -m bench.structure`: the structure figures issue #18 measures before and after.

Not a timing benchmark (so not a `bench_*` module): it reads the source with `ast` and prints
1. which `ackdeck.core.rooms` / `ackdeck.core.monitors` modules each door imports directly;
2. lines of code per layer;
3. per result concept, the places that declare its fields: a class body with annotated fields
   or properties, or a dict literal (a `SHAPE`), that names at least two of the concept's
   characteristic fields (target: one place each).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent / "src" / "ackdeck"  # paths below are in the package

DOORS = {
    "cli": ["core/cli"],
    "mcp server": [
        "core/mcp/server.py",
        "core/mcp/manage.py",
        "core/mcp/reply.py",
        "core/mcp/channel.py",
    ],
    "hooks": ["core/hooks.py"],
    "noticer": ["core/service/noticer.py", "core/service/notices.py"],
    "nudge": ["core/nudge.py"],
    "dashboard": ["tui"],
}
LAYERS = ["core/base", "core/inbox", "core/watch", "core/service", "core/agents", "core/cli", "tui"]
CONCEPTS = {
    "room status": {"partial_bytes", "acked_total", "preserved_total", "pushed_total"},
    "session counts": {"in_flight", "unread"},
    "read": {"lines", "epoch", "data"},
    "ack": {"mode", "acked", "preserved"},
    "push": {"offset", "room", "path"},
    # issue #31: the monitors' concepts too
    "run": {"pid", "started_at", "argv", "ended_at"},
    "monitor": {"pattern", "cooldown_ms", "max_events"},
    "output": {"run_id", "more", "spans"},
    "wake record": {"delivered_total", "superseded_total", "notice_pending"},
    "delivery": {"filter", "dropped", "read_rest", "total_matches"},
    "drain": {"delivered", "superseded"},
    "read hop": {"reader", "door", "at"},
    "line journey": {"pushed_at", "acked_by", "dead_room"},
}
# issue #31: how a record is declared. A class counts once, under its first matching base or
# decorator.
STYLES = {
    "Struct": ("Struct",),
    "JsonRecord": ("JsonRecord",),
    "Result": ("Result", "DecodedLines"),
    "dataclass": ("dataclass",),
    "NamedTuple": ("NamedTuple",),
    "pydantic": ("BaseModel",),
}


# Persisted records hold some of the same names (the ledger keeps the counters a status
# reports); they are a file's schema, not a result, and are not counted.
PERSISTED = {
    "Ledger",
    "ReceiptHeader",
    "AuditEntry",
    "RoomMark",
    "MatchedLine",
    "WakeLine",
    "RunMeta",
    "MonitorModel",
    "MonitorCounters",
    "WakeNotice",
    "ReadEntry",
}  # WakeRecord is not among them: it is also what `wakes list` shows (core/monitors/results.py)


def _files(parts: list[str]) -> list[Path]:
    out: list[Path] = []
    for part in parts:
        p = REPO / part
        out += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return [f for f in out if f.exists()]


def _imports(path: Path) -> set[str]:
    """What `path` imports when it runs (anywhere, also in functions), not for type checkers
    only (`if TYPE_CHECKING:` blocks)."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for stmt in block.body
        for n in ast.walk(stmt)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def door_imports() -> dict[str, list[str]]:
    result = {}
    for door, parts in DOORS.items():
        mods = set().union(*(_imports(f) for f in _files(parts)))
        result[door] = sorted(
            m for m in mods if m.startswith(("ackdeck.core.rooms", "ackdeck.core.monitors"))
        )
    return result


def lines_per_layer() -> dict[str, int]:
    return {
        layer: sum(len(f.read_text().splitlines()) for f in _files([layer])) for layer in LAYERS
    }


def _declared_names(node: ast.AST) -> set[str]:
    names: set[str] = set()
    if isinstance(node, ast.ClassDef):
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                names.add(stmt.target.id)
            elif isinstance(stmt, ast.FunctionDef) and any(
                isinstance(d, ast.Name) and d.id == "property" for d in stmt.decorator_list
            ):
                names.add(stmt.name)
    elif isinstance(node, ast.Dict):
        names = {k.value for k in node.keys if isinstance(k, ast.Constant)}
    return names


def field_declarations() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {c: [] for c in CONCEPTS}
    for f in _files(["core", "tui"]):
        rel = f.relative_to(REPO)
        tree = ast.parse(f.read_text())
        skipped = {  # `model_copy(update={...})` (pydantic): a change, not a declaration
            id(kw.value)
            for call in ast.walk(tree)
            if isinstance(call, ast.Call)
            for kw in call.keywords
            if kw.arg == "update"
        }
        skipped |= {  # `upd: dict[str, object] = {...}`: a change to a record, as update= above
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.AnnAssign)
            and node.value is not None
            and ast.unparse(node.annotation) == "dict[str, object]"
            for inner in ast.walk(node.value)
        }
        skipped |= {  # a persisted record's own `to_dict` writes its file's keys
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and node.name in PERSISTED
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef | ast.Dict) or id(node) in skipped:
                continue
            names = _declared_names(node)
            for concept, marks in CONCEPTS.items():
                if len(names & marks) >= 2 and not (
                    # a room's status names room/path too: push is offset plus those
                    concept == "push" and "offset" not in names
                ):
                    where = node.name if isinstance(node, ast.ClassDef) else "dict"
                    found[concept].append(f"{rel}:{node.lineno} {where}")
    return found


def _style(node: ast.ClassDef, result_classes: set[str]) -> str | None:
    names = {ast.unparse(b).split("[")[0].rsplit(".", 1)[-1] for b in node.bases}
    names |= {ast.unparse(d).split("(")[0].rsplit(".", 1)[-1] for d in node.decorator_list}
    for style, marks in STYLES.items():
        if names & set(marks):
            return style
    if names & result_classes:  # a subclass of a result class (Killed(Run))
        return "Result"
    return None


def declaration_styles() -> dict[str, int]:
    """Classes per declaration style across the package (message classes of the dashboard,
    a Textual `Message` dataclass, are counted as dataclasses)."""
    counts = dict.fromkeys(STYLES, 0)
    trees = [ast.parse(f.read_text()) for f in _files(["core", "tui"])]
    result_classes = {"Result", "DecodedLines"}
    for _ in range(2):  # subclasses of subclasses
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and _style(node, result_classes) == "Result":
                    result_classes.add(node.name)
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name not in STYLES:
                style = _style(node, result_classes)
                if style:
                    counts[style] += 1
    return counts


def main() -> None:
    print("## Direct imports of core.inbox / core.watch, per door\n")
    for door, mods in door_imports().items():
        print(f"- {door} ({len(mods)}): {', '.join(m.removeprefix('ackdeck.core.') for m in mods)}")
    print("\n## Lines per layer\n\n| layer | lines |\n| --- | --- |")
    layers = lines_per_layer()
    for layer, n in layers.items():
        print(f"| {layer} | {n} |")
    print(f"| total | {sum(layers.values())} |")
    print("\n## Places declaring each result's fields\n")
    for concept, places in field_declarations().items():
        print(f"- {concept}: {len(places)}")
        for p in places:
            print(f"  - {p}")
    print("\n## Classes per declaration style\n")
    for style, n in declaration_styles().items():
        print(f"- {style}: {n}")
    print("\n## Lines of the record mechanisms\n")
    for rel in ("core/base/struct.py", "core/base/jsonfields.py", "core/service/results.py"):
        p = REPO / rel
        print(f"- {rel}: {len(p.read_text().splitlines()) if p.exists() else 0}")
    evals = sum(f.read_text().count("eval(") for f in _files(["core", "tui"]))
    print(f"- `eval(` in the package: {evals}")


if __name__ == "__main__":
    main()
