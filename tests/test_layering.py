"""core is a library: it never imports Textual or the dashboard (the dashboard depends on core,
not back). Checked on the import graph read with `ast`, so an import inside a function, a
relative import or `importlib.import_module("tui…")` counts as much as one at the top."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "src" / "ackdeck"  # the package (a src/ layout)
FORBIDDEN = ("textual", "ackdeck.tui", "tui")


def _module_name(path: Path) -> str:
    """The import name of a file of the package (src/ackdeck/...)."""
    parts = ["ackdeck", *path.relative_to(PKG).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the nodes inside `if TYPE_CHECKING:` blocks (never run)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(id(n) for n in ast.walk(child))
    return skipped


def imports_of(path: Path, name: str, *, runtime_only: bool = False) -> set[str]:
    """Every module `path` (the module `name`) may import, wherever the import statement is
    (with `runtime_only`, not counting imports made for type checkers only)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_only(tree) if runtime_only else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            found.add(prefix)
            found.update(f"{prefix}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return found


def _forbidden(module: str) -> bool:
    return any(module == f or module.startswith(f + ".") for f in FORBIDDEN)


def core_import_graph(*, runtime_only: bool = False) -> dict[str, set[str]]:
    paths = sorted((PKG / "core").rglob("*.py"))
    return {
        _module_name(p): imports_of(p, _module_name(p), runtime_only=runtime_only) for p in paths
    }


def test_nothing_reachable_from_core_imports_textual_or_tui() -> None:
    graph = core_import_graph()
    offenders = []
    for start in graph:
        # Walk the graph from each core module through core modules only.
        seen, todo = {start}, [start]
        while todo:
            mod = todo.pop()
            for target in graph.get(mod, ()):
                if _forbidden(target):
                    offenders.append(f"{start} reaches {target} (imported by {mod})")
                elif target in graph and target not in seen:
                    seen.add(target)
                    todo.append(target)
    assert offenders == []


def test_the_walker_sees_imports_in_functions_and_relative_ones(tmp_path: Path) -> None:
    """The check cannot pass by missing the old `core/cli/dash_cmd.py` way of importing tui."""
    probe = tmp_path / "dash_cmd.py"
    probe.write_text(
        "def f():\n    from ackdeck.tui.app import make_app\n"
        "    from ..base.home import resolve_home\n"
        "    import importlib\n    importlib.import_module('textual.app')\n"
    )
    found = imports_of(probe, "ackdeck.core.cli.dash_cmd")
    assert {"ackdeck.tui.app", "ackdeck.core.base.home", "textual.app"} <= found


def test_core_never_imports_textual_at_run_time() -> None:
    """The same at run time, which also covers third-party packages core imports."""
    code = (
        "import sys, pkgutil, importlib, ackdeck.core\n"
        "for m in pkgutil.walk_packages(ackdeck.core.__path__, 'ackdeck.core.'):\n"
        "    if m.name.endswith('__main__'): continue\n"
        "    importlib.import_module(m.name)\n"
        "bad = sorted(n for n in sys.modules\n"
        "             if n.split('.')[0] == 'textual' or n.startswith('ackdeck.tui'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"core imported: {out.stdout.strip()}"


def test_core_has_no_import_cycles_even_through_late_imports() -> None:
    """procs -> tail -> wakes -> procs used to be dodged with an import inside a function.
    Imports for type checkers only (`if TYPE_CHECKING:`) never run and do not count."""
    graph = core_import_graph(runtime_only=True)
    edges = {
        m: {
            t
            for t in targets
            if t in graph and t not in (m, "ackdeck", "ackdeck.core", "ackdeck.core.cli")
        }
        for m, targets in graph.items()
    }
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    cycles: list[list[str]] = []

    def visit(mod: str, path: list[str]) -> None:
        state[mod] = 1
        for nxt in sorted(edges[mod]):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[mod] = 2

    for mod in sorted(edges):
        if mod not in state:
            visit(mod, [mod])
    assert cycles == []


def test_every_exception_class_of_core_lives_in_errors_py() -> None:
    from ackdeck.core import errors

    exception_names = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    }
    exception_names |= {"Exception", "BaseException", "ValueError", "OSError", "RuntimeError"}
    offenders = []
    for path in sorted((PKG / "core").rglob("*.py")):
        if path.name == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(base).split(".")[-1] in exception_names for base in node.bases
            ):
                offenders.append(f"{path.relative_to(REPO)}: {node.name}")
    assert offenders == []


# What the hot path (pyproject.toml, [tool.importlinter] "hot path") must not load, checked at
# run time as well: the contract sees ackdeck's own imports, this sees what they pull in. The
# optional backends and SDKs, the redis URL parser (a file room never needs it), and
# dataclasses with inspect (6-16 ms of a ~35 ms start on a busy machine, measured with
# -X importtime; notes/ISSUE-18.md), and typing (2-5 ms: the hot path's modules write
# `TYPE_CHECKING = False`, which type checkers recognise, PEP 781; notes/ISSUE-18b.md). The
# standard library is otherwise used normally.
HEAVY_FOR_A_TURN = {
    "redis",
    "pydantic",
    "re2",
    "textual",
    "mcp",
    "ackdeck.core.rooms.room_url",
    "dataclasses",
    "inspect",
    "typing",
    # argparse with gettext and locale, ~3 ms: the per-turn commands are parsed by
    # core/cli/_fast.py (issue 43); argparse is loaded for help, errors and other commands.
    "argparse",
}

_HOT_PROBE = (
    "import sys\n"
    "from ackdeck.core.cli import main\n"
    "code = main(sys.argv[1:])\n"
    f"heavy = {sorted(HEAVY_FOR_A_TURN)!r}\n"
    # A module without a spec was not imported but put into sys.modules by hand (a stand-in
    # for a standard module, the old argparse-without-gettext trick): never again. (Python
    # 3.11's typing registers `typing.io` and `typing.re` that way itself: not top-level.)
    "fake = sorted(n for n, m in list(sys.modules.items()) if '.' not in n\n"
    "              and n != '__main__' and getattr(m, '__spec__', None) is None)\n"
    "print('all:' + ','.join(sorted(sys.modules)), file=sys.stderr)\n"
    "print('ackdeck:' + ','.join(sorted(n for n in sys.modules if n.startswith('ackdeck'))),"
    " file=sys.stderr)\n"
    "print('loaded:' + ','.join(sorted(n for n in sys.modules"
    " if n in heavy or n.split('.')[0] in heavy) + ['stand-in:' + n for n in fake]),"
    " file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _probe_env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "ACKDECK_HOME": str(tmp_path / "home"),
        "ACKDECK_SESSION": "s1",
    }


def _probe(args: list[str], tmp_path: Path, stdin: str = "") -> tuple[list[str], set[str]]:
    """What one command loaded of HEAVY_FOR_A_TURN (and any stand-in), and ackdeck's modules."""
    out = subprocess.run(
        [sys.executable, "-c", _HOT_PROBE, *args],
        cwd=tmp_path,
        env=_probe_env(tmp_path),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    *_, own, last = out.stderr.strip().splitlines()
    assert own.startswith("ackdeck:") and last.startswith("loaded:"), out.stderr
    loaded = [m for m in last.removeprefix("loaded:").split(",") if m]
    return loaded, set(own.removeprefix("ackdeck:").split(","))


def _loaded_by(args: list[str], tmp_path: Path, stdin: str = "") -> list[str]:
    return _probe(args, tmp_path, stdin)[0]


def _per_turn_commands(tmp_path: Path) -> list[tuple[list[str], str]]:
    """The hot path's commands (pyproject.toml, the "hot-path" contract) on a file room."""
    room = str(tmp_path / "r.txt")
    hooks = ["--room", room, "--session", "s1"]
    return [
        (["room", "push", room, "hello"], ""),
        (["room", "read", room], ""),
        (["room", "ack", room], ""),
        (["room", "status", room], ""),
        (["wakes", "drain", "--hook"], ""),
        (["hooks", "prompt", *hooks], "{}"),
        (["hooks", "stop", *hooks], "{}"),
        (["hooks", "bootstrap", *hooks], "{}"),
        # issue 32: the presence hooks run on every notification and at every session's end
        (["hooks", "notify", "--session", "s1"], '{"notification_type": "idle_prompt"}'),
        (["hooks", "end", "--session", "s1"], '{"reason": "other"}'),
    ]


def test_per_turn_commands_on_a_file_room_load_nothing_heavy(
    tmp_path: Path,
) -> None:
    """Every door opens rooms through one room reference (which takes redis URLs), but a file
    room's per-turn commands must not pay for redis, pydantic, RE2 or any of HEAVY_FOR_A_TURN
    at start-up, and load only real modules (no stand-in for a standard one)."""
    commands = _per_turn_commands(tmp_path)
    loaded = {" ".join(args[:2]): _loaded_by(args, tmp_path, stdin) for args, stdin in commands}
    assert loaded == {name: [] for name in loaded}


# The per-turn commands' import budget (issue 43): how many modules each imports beyond a bare
# interpreter (`python -c pass` in the same venv), ackdeck's own and the rest (standard library,
# third party), as measured when the budget was set. Module counts, not times: deterministic on
# a loaded machine, where a timing ratio drifts (a slow `python -c pass` flatters it). The
# check is two-sided: more than HEADROOM over names the modules that broke it; more than
# HEADROOM under asks for the lower figure, so the headroom freed by a cut is not quietly
# spent later. The standard library's share differs between Python versions: it is budgeted
# for the versions it was measured on (the ackdeck share on every version).
TURN_BUDGET_ACKDECK = {
    # A producer's plain push runs the file room's append alone (core/service/push.py); the
    # other commands gained the two light modules split out for it (sidecar_checks,
    # ledger_slots) while importing one standard module fewer.
    "room push": 26,
    # The read path without the push's descriptors or the notices' views (issue 43, the read
    # path; NOT_FOR_A_READ below).
    "room read": 49,
    "room ack": 50,
    "room status": 43,
    # A drain with nothing to deliver lists two folders (core/service/pending.py) and loads
    # no wake module.
    "wakes drain": 16,
    # The hooks name their home with a str: base/home.py's made_home (no Path built from it).
    # Their handlers are core/cli/hook_turns.py, without agents_cmd's registration (and its
    # import of _hook_events): one module fewer (issue 43, the bytecode a turn loads).
    "hooks prompt": 54,
    # The Stop hook drains only when a wake record or a run is there (core/service/pending.py).
    "hooks stop": 55,
    "hooks bootstrap": 55,
    # The hooks that only record their event: the stdin JSON, the home as a string, one
    # append (core/cli/_hook_events.py).
    "hooks notify": 19,
    "hooks end": 19,
}
TURN_BUDGET_OTHER = {
    # JSON is read and written through core/base/jsontext.py, not `json`: the hooks that only
    # record their event no longer import `re` at all (26 -> 4 modules; 5 with the presence
    # lock's `fcntl`).
    (3, 11): {
        "room push": 4,
        # contextlib and math are no longer loaded by the room readers (NOT_FOR_A_READ); the
        # Stop hook's drain still loads contextlib with the wake modules. The birth time takes
        # `_ctypes` alone, not ctypes with ctypes._endian, struct and _struct (4 fewer). A file
        # room's names are plain strings: no pathlib (with `re`, `enum`, `functools`,
        # `collections`, `fnmatch`, `urllib.parse`, `ipaddress`) for read, ack and status.
        "room read": 9,
        "room ack": 7,
        "room status": 7,
        "wakes drain": 3,
        # The hooks that have something to say name the home, the notices' state, the gate's
        # stamp and the claims' marks with strings too (issue 43): 33 -> 8, no pathlib.
        "hooks prompt": 8,
        "hooks stop": 8,
        "hooks bootstrap": 8,
        "hooks notify": 5,
        "hooks end": 5,
    },
}
HEADROOM = 3


def _importers(log: str) -> dict[str, str]:
    """Who imported each module, from a `-X importtime` log: it lists a module after the ones
    it imported, indented one level deeper (two spaces), so a line's children are the deeper
    lines just before it. A module imported at the top level (by the command itself, or in a
    function) has no entry."""
    importer: dict[str, str] = {}
    waiting: list[tuple[int, str]] = []
    for line in log.splitlines():
        fields = line.split("|")
        if not line.startswith("import time:") or len(fields) != 3:
            continue
        name = fields[2].strip()
        if name == "imported package":
            continue
        depth = (len(fields[2]) - len(fields[2].lstrip()) - 1) // 2
        while waiting and waiting[-1][0] > depth:
            importer[waiting.pop()[1]] = name
        waiting.append((depth, name))
    return importer


def _command_imports(
    args: list[str], tmp_path: Path, stdin: str = "", env: dict[str, str] | None = None
) -> tuple[set[str], dict[str, str]]:
    """Every module one command had loaded at its exit, and who imported each (`env`: added
    to the probe's environment)."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _HOT_PROBE, *args],
        cwd=tmp_path,
        env={**_probe_env(tmp_path), **(env or {})},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = [line for line in out.stderr.splitlines() if line.startswith("all:")]
    assert found, out.stderr[-2000:]
    return set(found[-1].removeprefix("all:").split(",")), _importers(out.stderr)


def _bare_modules(tmp_path: Path) -> set[str]:
    code = "import sys; print(','.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=_probe_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(out.stdout.strip().split(","))


def _over_budget(
    command: str, share: str, names: set[str], budget: int, importer: dict[str, str]
) -> str | None:
    """The complaint about one command's share of modules, or None when within the budget."""
    if budget - HEADROOM <= len(names) <= budget + HEADROOM:
        return None
    if len(names) < budget - HEADROOM:
        return (
            f"{command}: {len(names)} {share} modules, well under the budget of {budget}: "
            f"set it to {len(names)} in tests/test_layering.py (keep the cut)"
        )
    which = ", ".join(
        f"{n} (imported by {importer.get(n, 'the command, or a function of it')})"
        for n in sorted(names)
    )
    return (
        f"{command}: {len(names)} {share} modules, over the budget of {budget} (+{HEADROOM}). "
        f"Import the new ones only on the branch that uses them. All of them: {which}"
    )


def test_per_turn_commands_stay_within_their_module_budget(tmp_path: Path) -> None:
    """Each per-turn command on a file room imports at most its budget of modules beyond a bare
    interpreter, counted in a fresh interpreter (issue 43: `room push` had grown from 26 to
    130 modules unnoticed, doubling the per-turn cost)."""
    bare = _bare_modules(tmp_path)
    other_budget = TURN_BUDGET_OTHER.get(sys.version_info[:2])
    commands = _per_turn_commands(tmp_path)
    # Every turn but a room's first finds it set up: its ledger is there (writing the first
    # one takes json, once).
    _probe(commands[0][0], tmp_path, commands[0][1])
    complaints = []
    for args, stdin in commands:
        command = " ".join(args[:2])
        loaded, importer = _command_imports(args, tmp_path, stdin)
        new = loaded - bare
        own = {n for n in new if n == "ackdeck" or n.startswith("ackdeck.")}
        shares = [("ackdeck", own, TURN_BUDGET_ACKDECK[command])]
        if other_budget is not None:
            shares.append(("other", new - own, other_budget[command]))
        for share, names, budget in shares:
            complaint = _over_budget(command, share, names, budget, importer)
            if complaint:
                complaints.append(complaint)
    assert not complaints, "\n".join(complaints)


# The bytes of ackdeck's own bytecode each reading command loads (issue 43): with the standard
# library off their path, what is left of a turn's start-up is loading ackdeck's modules, and
# about half of those bytes were functions the command never calls (other commands' handlers,
# argparse registration, the readers of a log a turn only appends to). A module count does not
# see a module grow: this does. Sizes of `marshal.dumps` of each loaded module's code, compiled
# here (what the .pyc holds, deterministic for one Python version and the same on every
# machine). Two-sided as the module budget: over by more than BYTECODE_HEADROOM names the
# biggest modules; under by more asks for the lower figure, so a cut's bytes are not spent
# again unnoticed. Per Python version (bytecode differs): measured on 3.11, and the same
# modules compiled by 3.12 and 3.13. Before the cut (issue 43, eighth session) a read loaded
# 637,412 bytes, an ack 677,799, a status 585,960, the prompt hook 731,630 (on 3.11).
TURN_BYTECODE_BUDGET = {
    (3, 11): {
        "room read": 575_027,
        "room ack": 615_414,
        "room status": 548_649,
        "hooks prompt": 630_592,
    },
    (3, 12): {
        "room read": 517_706,
        "room ack": 557_931,
        "room status": 493_540,
        "hooks prompt": 568_513,
    },
    (3, 13): {
        "room read": 523_356,
        "room ack": 563_731,
        "room status": 498_970,
        "hooks prompt": 575_163,
    },
}
BYTECODE_HEADROOM = 16_000  # bytes: a few functions' worth, never a module's


def _bytecode_sizes(names: set[str]) -> dict[str, int]:
    """Bytes of marshalled code of each ackdeck module in `names` (as its .pyc holds it)."""
    import importlib.util
    import marshal

    sizes = {}
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            continue  # a namespace package: no code of its own
        source = Path(spec.origin).read_bytes()
        sizes[name] = len(marshal.dumps(compile(source, spec.origin, "exec")))
    return sizes


def _over_bytecode_budget(command: str, sizes: dict[str, int], budget: int) -> str | None:
    """The complaint about one command's bytes of ackdeck bytecode, or None within budget."""
    total = sum(sizes.values())
    if budget - BYTECODE_HEADROOM <= total <= budget + BYTECODE_HEADROOM:
        return None
    if total < budget - BYTECODE_HEADROOM:
        return (
            f"{command}: {total} bytes of ackdeck bytecode, well under the budget of {budget}: "
            f"set it to {total} in tests/test_layering.py (keep the cut)"
        )
    biggest = sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[:8]
    return (
        f"{command}: {total} bytes of ackdeck bytecode, over the budget of {budget} "
        f"(+{BYTECODE_HEADROOM}). Move what this command does not run off its path (a module "
        f"of its own, imported where it runs). The biggest: "
        + ", ".join(f"{n} {b}" for n, b in biggest)
    )


def test_reading_commands_stay_within_their_bytecode_budget(tmp_path: Path) -> None:
    """A turn's read, ack and status of a file room, and the prompt hook with a line to tell,
    load at most their budget of ackdeck bytecode, counted in a fresh interpreter (issue 43:
    a read loaded 636 KB of it, half of it functions the read never calls)."""
    budgets = TURN_BYTECODE_BUDGET.get(sys.version_info[:2])
    if budgets is None:
        pytest.skip(f"bytecode budgeted on {sorted(TURN_BYTECODE_BUDGET)} only")
    commands = {" ".join(a[:2]): (a, stdin) for a, stdin in _per_turn_commands(tmp_path)}
    push = commands["room push"]
    complaints, measured = [], {}
    # Each as a turn meets it: a line to read, the read's lines to ack, lines to count and to
    # tell about.
    for command in ("room read", "room ack", "room status", "hooks prompt"):
        if command != "room ack":
            _probe(push[0], tmp_path, push[1])
        args, stdin = commands[command]
        loaded, _importer = _command_imports(args, tmp_path, stdin)
        sizes = _bytecode_sizes({n for n in loaded if n == "ackdeck" or n.startswith("ackdeck.")})
        measured[command] = sum(sizes.values())
        complaint = _over_bytecode_budget(command, sizes, budgets[command])
        if complaint:
            complaints.append(complaint)
    assert not complaints, "\n".join(complaints) + f"\nmeasured: {measured}"


def test_the_bytecode_budget_names_the_biggest_modules() -> None:
    """The failure names the biggest modules with their bytes; a figure well under asks for
    the lower budget."""
    sizes = {"ackdeck.core.rooms.file.room": 60_000, "ackdeck.core.cli": 9_000}
    said = _over_bytecode_budget("room read", sizes, 69_000 - BYTECODE_HEADROOM - 1)
    assert said is not None and "ackdeck.core.rooms.file.room 60000" in said
    assert said.index("rooms.file.room") < said.index("ackdeck.core.cli 9000")
    assert _over_bytecode_budget("room read", sizes, 69_000 - BYTECODE_HEADROOM) is None
    assert _over_bytecode_budget("room read", sizes, 69_000 + BYTECODE_HEADROOM) is None
    under = _over_bytecode_budget("room read", sizes, 69_000 + BYTECODE_HEADROOM + 1)
    assert under is not None and "set it to 69000" in under


# What a file room's read, ack and status, and the prompt and session-start hooks that read
# rooms, must not load (issue 43, the read path): the room's lock, the ack's head check and
# the deck's open are small classes rather than contextlib generators (every operation takes
# them); the wait's timeout rule (math) loads only when a wait times out; the notices' views
# only for the hooks; the push's descriptors only for a push. The Stop hook drains wakes only
# when a wake record or a run is there (core/service/pending.py): with neither, no wake module
# (and no contextlib with them). The `ctypes` package (~2 ms: dozens of classes, struct,
# _endian) is not needed for a file's birth time: core/base/fileid.py calls statx through the
# `_ctypes` extension alone.
NOT_FOR_A_READ = {
    "contextlib",
    "math",
    "ctypes",
    # A file room's names are plain strings (core/rooms/file/room.py, sidecar.py, ack.py;
    # core/service/roomref.py): pathlib brought `re`, `fnmatch`, `urllib.parse`, `ipaddress`
    # (~2x a bare interpreter alone); `collections.abc` for annotations, `functools` for a
    # partial (both bring `collections`) are for type checkers or come from `_functools`.
    "pathlib",
    "collections",
    "collections.abc",
    "functools",
    "ackdeck.core.service.views",
    "ackdeck.core.rooms.file.push_handles",
    "ackdeck.core.service.wakes",
    "ackdeck.core.monitors.wakes",
}
# The hooks name the home, the notices' state, the gate's stamp and the claims' marks with
# plain strings too (core/hooks.py, core/service/noticer.py, quiet.py, claims.py): only the
# notices' views, which a hook that looks at rooms needs, are allowed to them.
NEEDED_BY_THE_HOOKS = {"ackdeck.core.service.views"}


def _ours(importer: str | None) -> bool:
    """Was a module imported by ackdeck's code (None: at the top level, which for a command's
    run means in a function of ackdeck's), not by another library's module?"""
    return importer is None or importer == "ackdeck" or importer.startswith("ackdeck.")


def test_a_file_rooms_read_ack_status_and_reading_hooks_load_no_contextlib_or_rare_modules(
    tmp_path: Path,
) -> None:
    """Each of these modules was loaded by every read, ack and status of a file room, for a
    branch the command does not run (a timed-out wait, a notice's view, a push, a drain of
    wakes nobody has)."""
    commands = dict(
        (" ".join(args[:2]), (args, stdin)) for args, stdin in _per_turn_commands(tmp_path)
    )
    _probe(*commands["room push"][:1], tmp_path)  # a line to read, then to ack
    loaded = {}
    reading = ("room read", "room ack", "room status", "hooks prompt", "hooks stop")
    for name in (*reading, "hooks bootstrap"):
        args, stdin = commands[name]
        found, importer = _command_imports(args, tmp_path, stdin)
        unwanted = NOT_FOR_A_READ - (NEEDED_BY_THE_HOOKS if name.startswith("hooks") else set())
        # What ackdeck imports (at the top of a module or in a function: no importer then);
        # one standard module importing another is the budget's count (on 3.13 pathlib's
        # glob imports contextlib, and the read still imports pathlib).
        ours = {m for m in found & unwanted if _ours(importer.get(m))}
        loaded[name] = sorted(f"{m} (imported by {importer.get(m, '?')})" for m in ours)
    assert loaded == {name: [] for name in loaded}


def _gated_hooks(tmp_path: Path) -> list[tuple[list[str], dict[str, str]]]:
    """The three hooks that have something to say as their gates start them (`--gate KEY`,
    ACKDECK_GATE_HOME: the stamp's module), with a line waiting in the room and a queue claim
    held (the Stop hook's reminder: the claims' module)."""
    from ackdeck.core.service import quiet

    room = str(tmp_path / "r.txt")
    _probe(["room", "push", room, "hello"], tmp_path)
    home = tmp_path / "home"
    marks = home / "claims" / "s1"
    marks.mkdir(parents=True, exist_ok=True)
    mark = {"room": room, "token": "1-abc", "line": "task", "claimed_at": 1.0, "until": 2.0}
    (marks / "1-abc.json").write_text(json.dumps(mark))
    gate = ["--room", room, "--session", "s1", "--gate", quiet.key([room])]
    env = {"ACKDECK_GATE_HOME": str(home)}
    return [(["hooks", door, *gate], env) for door in ("prompt", "stop", "bootstrap")]


def test_the_gated_hooks_with_a_line_and_a_claim_load_no_pathlib_collections_or_typing(
    tmp_path: Path,
) -> None:
    """The hooks name the home, the notices' state, the gate's stamp and the claims' marks
    with strings (issue 43): pathlib brought `re`, `enum`, `functools` and `collections` into
    every prompt, stop and session start that had something to say (95 modules, 2.9x a bare
    interpreter). Run as the gates run them, with something to tell, so the stamp and the
    claims' reminder are on the path measured."""
    unwanted = {"pathlib", "collections", "collections.abc", "functools", "typing", "re", "enum"}
    unwanted -= _bare_modules(tmp_path)
    loaded = {}
    for args, env in _gated_hooks(tmp_path):
        found, importer = _command_imports(args, tmp_path, "{}", env)
        assert "ackdeck.core.service.quiet" in found, args
        if args[1] == "stop":
            assert "ackdeck.core.service.claims" in found, args
        loaded[args[1]] = sorted(
            f"{m} (imported by {importer.get(m, '?')})" for m in found & unwanted
        )
    assert loaded == {name: [] for name in loaded}


def test_the_gated_stop_hook_in_a_home_with_a_run_loads_no_pathlib_collections_or_typing(
    tmp_path: Path,
) -> None:
    """A home with a run: the Stop hook's gate always runs ackdeck there (its supervisor may
    have died, which only the drain's reconcile tells), and the hook drains. The reconcile
    reads the run's records and the drain delivers a wake with the home as a string (issue 43):
    pathlib brought `re`, `enum`, `functools` and `collections` into every such stop (106
    modules, ~3.2x a bare interpreter). Run as its gate runs it, with a matched line of the
    run to deliver, so the settle, the gate and the run's status are on the path measured."""
    from ackdeck.core.monitors import runs, wakes
    from ackdeck.core.monitors.monitors import MatchedLine

    unwanted = {"pathlib", "collections", "collections.abc", "functools", "typing", "re", "enum"}
    unwanted |= {"contextlib"}
    unwanted -= _bare_modules(tmp_path)
    home = tmp_path / "home"
    rid = "20261207T000000000-abcdef"
    rdir = runs.run_dir(home, "build", rid)
    rdir.mkdir(parents=True)
    meta = runs.RunMeta(
        name="build", run_id=rid, argv=["make"], cwd=str(tmp_path), session="s1",
        status="exited", exit_code=0, created_at=1.0, started_at=1.0, ended_at=2.0,
    )  # fmt: skip
    runs.store_meta(rdir, meta)
    wakes.merge(
        home, "s1", "build", run_id=rid, kind="match", lines=[MatchedLine(0, 6, "ERROR")],
        filter="ERROR", exclude=False, matches=1, status="exited",
    )  # fmt: skip
    loaded = {}
    for args, env in _gated_hooks(tmp_path):
        if args[1] != "stop":
            continue
        found, importer = _command_imports(args, tmp_path, "{}", env)
        # It reconciled, drained and delivered the line (the gate's modules are imported only
        # for a snapshot with something to deliver).
        assert {"ackdeck.core.monitors.reconcile", "ackdeck.core.monitors.gate"} <= found
        loaded[args[1]] = sorted(
            f"{m} (imported by {importer.get(m, '?')})" for m in found & unwanted
        )
    record = wakes.list_wakes(home, "s1")[0]
    assert loaded == {"stop": []} and record.lines == [] and record.delivered_total == 1


def test_the_budget_names_the_module_that_broke_it() -> None:
    """The failure says which module was imported and by whom (from -X importtime's tree)."""
    log = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:        10 |         10 |     json.decoder\n"
        "import time:        20 |         30 |   json\n"
        "import time:        40 |         70 | ackdeck.core.rooms.file.sidecar\n"
    )
    importer = _importers(log)
    assert importer == {"json.decoder": "json", "json": "ackdeck.core.rooms.file.sidecar"}
    names = {"json", "json.decoder", "ackdeck.core.rooms.file.sidecar"}
    said = _over_budget("room push", "other", names, 3 - HEADROOM - 1, importer)
    assert said is not None and "json (imported by ackdeck.core.rooms.file.sidecar)" in said
    assert _over_budget("room push", "other", names, 3 - HEADROOM, importer) is None
    assert _over_budget("room push", "other", names, 3 + HEADROOM, importer) is None
    under = _over_budget("room push", "other", names, 3 + HEADROOM + 1, importer)
    assert under is not None and "set it to 3" in under


def test_a_redis_url_loads_the_redis_backend_only_then(tmp_path: Path) -> None:
    # An unreachable server: the command fails with one line, but it did open a redis room.
    loaded = _loaded_by(["room", "status", "redis://127.0.0.1:1/0/probe"], tmp_path)
    assert "redis" in loaded and "ackdeck.core.rooms.room_url" in loaded


def _supervisor_modules(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """ackdeck's modules a run's supervisor imports over a whole life (start, a scan with a
    match, the exit), from its -X importtime log; it runs as `-m
    ackdeck.core.monitors.supervisor`."""
    from tests.helpers.runs import supervisor_imports

    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    names = supervisor_imports(home, tmp_path, "hot")
    assert "ackdeck.core.monitors.tail" in names  # the log is the supervisor's
    return {n for n in names if n.startswith("ackdeck")} | {"ackdeck.core.monitors.supervisor"}


def test_type_checking_false_is_written_only_on_the_hot_path(
    phome: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`TYPE_CHECKING = False` keeps typing off the hot path (the per-turn commands and the
    supervisor, measured here by running them); the rest of the library imports typing
    normally, so the idiom may not spread to a module those never load."""
    hot: set[str] = set()
    for args, stdin in _per_turn_commands(tmp_path):
        hot |= _probe(args, tmp_path, stdin)[1]
    # A Stop hook's drain that has a wake to deliver: the wake modules are per-turn too then
    # (the quiet drain above lists two folders and loads none of them).
    from ackdeck.core.monitors import wakes
    from ackdeck.core.monitors.monitors import MatchedLine

    wakes.merge(
        tmp_path / "home", "s1", "build", run_id="run1", kind="match",
        lines=[MatchedLine(0, 6, "ERROR")], filter="ERROR", exclude=False, matches=1,
        status="running",
    )  # fmt: skip
    hot |= _probe(["wakes", "drain", "--hook"], tmp_path)[1]
    for args, env in _gated_hooks(tmp_path):  # the gate's stamp, the claims' reminder
        hot |= {
            m for m in _command_imports(args, tmp_path, "{}", env)[0] if m.startswith("ackdeck")
        }
    hot |= _supervisor_modules(phome, tmp_path, monkeypatch)
    writers = {
        _module_name(path)
        for folder in ("core", "tui")
        for path in (PKG / folder).rglob("*.py")
        if any(
            isinstance(node, ast.Assign) and ast.unparse(node) == "TYPE_CHECKING = False"
            for node in ast.parse(path.read_text()).body
        )
    }
    assert "ackdeck.core.base.jsonfields" in writers and "ackdeck.core.monitors.scan" in hot
    assert sorted(writers - hot) == []


def test_screens_widgets_and_commands_never_import_the_app_class() -> None:
    """The app imports its screens; they reach it through `tui.host.Host`, never back."""
    parts = [*(PKG / "tui" / "screens").glob("*.py"), *(PKG / "tui" / "widgets").glob("*.py")]
    parts += [PKG / "tui" / "commands.py", PKG / "tui" / "host.py"]
    offenders = {}
    for p in parts:
        name = _module_name(p)
        back = sorted(
            m
            for m in imports_of(p, name)
            if m == "ackdeck.tui.app" or m.startswith("ackdeck.tui.app.")
        )
        if back:
            offenders[name] = back
    assert offenders == {}
