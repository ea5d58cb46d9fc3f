"""Every file ackdeck keeps on disk is named in one module, `ackdeck.core.base.locations`, and
the configuration reference lists each of them. Read with `ast`: a path joined from a literal
name (`d / "ledger"`, `d / f"{s}.json"`, `os.path.join(d, "x")`, `p.with_name(...)`) anywhere
else in the package is a second place naming state, and fails here with its file and line."""

from __future__ import annotations

import ast
from pathlib import Path

from ackdeck.core.base import locations

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "src" / "ackdeck"

# Paths that are not ackdeck's state, each with the reason it is built where it is.
NOT_STATE = {
    "core/base/home.py": "the home itself (~/.ackdeck), the root everything else hangs from",
    "core/base/atomic.py": "the temp file of an atomic write, beside whatever it replaces",
    "core/base/faults.py": "the tests' pause marker, a file the test names",
    "core/base/names.py": "a room path as the user wrote it",
    "core/hook_install.py": "Claude Code's settings.json, a file another tool owns",
    "core/mcp/server_config.py": "Claude Code's .mcp.json, a file another tool owns",
    "core/cli/agents_cmd.py": "the ackdeck executable beside the interpreter",
    "core/service/metrics.py": "room paths from the command line",
    "tui/config.py": "the dashboard's config file, chosen by the user",
    "tui/screenshots.py": "pictures and scratch rooms `make screenshots` draws",
    "tui/demo.py": "the demo's scratch rooms",
    "tui/scenes.py": "the screenshots' scratch rooms",
}


def _literal(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def _builds_a_path(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _literal(node.right)
    if isinstance(node, ast.Call):
        name = ast.unparse(node.func)
        if name.endswith("os.path.join") or name == "join":
            return any(_literal(a) for a in node.args[1:])
        if name.endswith(".with_name") or name.endswith(".with_suffix"):
            return True
    return False


def state_paths_built_outside() -> list[str]:
    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel == "core/base/locations.py" or rel in NOT_STATE:
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if _builds_a_path(node):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def file_names_spelled_outside() -> list[str]:
    """Module-level constants elsewhere that spell one of the names locations holds
    (`FILE = "policy.json"`): a second place naming a file, even if joined later."""
    names = {
        v for k, v in vars(locations).items() if k.isupper() and isinstance(v, str) and len(v) > 1
    }
    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel == "core/base/locations.py" or rel in NOT_STATE:
            continue
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                if node.value.value in names:
                    found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_but_locations_builds_a_state_path() -> None:
    assert state_paths_built_outside() == []
    assert file_names_spelled_outside() == []


def test_the_scan_finds_a_path_built_from_a_literal(tmp_path: Path) -> None:
    # The scan itself must be able to fail: each form it looks for, in a scratch module.
    src = (
        'import os\na = d / "ledger"\nb = d / f"{s}.json"\n'
        'c = os.path.join(d, "x")\ne = p.with_name("y")\n'
    )
    tree = ast.parse(src)
    assert sum(_builds_a_path(n) for n in ast.walk(tree)) == 4


def test_every_named_file_is_in_the_reference() -> None:
    named = {
        n
        for n, f in vars(locations).items()
        if callable(f)
        and getattr(f, "__module__", "") == locations.__name__
        and not n.startswith("_")
        and f.__annotations__.get("return") == "Path"
    }
    described = {p.named_by for p in locations.FILES}
    # Directories that only hold described files need no row of their own.
    containers = {
        "procs_dir",
        "starts_dir",
        "wakes_dir",
        "wake_session_dir",
        "notices_dir",
        "alerts_dir",
        "redis_doubts_dir",
        "claims_dir",
        "claims_root",
        "shown_dir",
        "lock_file",
        "default_home",
    }
    assert named - described - containers == set()
    assert described <= set(vars(locations))
    table = locations.reference_table()
    for place in locations.FILES:
        assert f"`{place.pattern}`" in table


def test_the_configuration_page_takes_its_list_from_locations() -> None:
    import sys

    sys.path.insert(0, str(REPO / "docs" / "hooks"))
    try:
        import gen_ref
    finally:
        sys.path.remove(str(REPO / "docs" / "hooks"))
    page = (REPO / "docs" / "reference" / "configuration.md").read_text()
    assert gen_ref.FILES_MARK in page
    out = gen_ref.on_page_markdown(page, page=_Page("reference/configuration.md"))
    assert gen_ref.FILES_MARK not in out
    assert "`journey/seen`" in out and "`redis-doubts/KEY.json`" in out


def test_locks_follow_one_rule(tmp_path: Path) -> None:
    L = locations
    home, side, rdir = tmp_path, tmp_path / ".r.ackdeck", tmp_path / "run"
    locks = [
        L.room_lock(side),
        L.run_lock(rdir),
        L.supervisor_lock(rdir),
        L.shown_lock(rdir, "s"),
        L.start_lock(home, "p"),
        L.wake_lock(home, "s"),
        L.drain_lock(home, "s"),
        L.notice_lock(home, "s", "hooks"),
        L.alerts_lock(home, "o"),
    ]
    # The names users already have on disk: none moved.
    assert [p.relative_to(tmp_path).as_posix() for p in locks] == [
        ".r.ackdeck/lock",
        "run/lock",
        "run/supervisor.lock",
        "run/reads/s.lock",
        "starts/p.lock",
        "wakes/s/.lock",
        "wakes/s/.drain.lock",
        "notices/s/.hooks.lock",
        "alerts/o/.lock",
    ]
    for p in locks:
        assert p.name.lstrip(".") == "lock" or p.name.endswith(".lock")


class _Page:
    def __init__(self, src: str) -> None:
        self.file = type("F", (), {"src_uri": src})()


def test_a_supervisor_s_str_paths_name_the_files_a_path_names() -> None:
    """A run's supervisor builds every name from plain strings (no pathlib: issue 43 item 3),
    the CLI and the dashboard from Paths. Both must name the same file, or a supervisor would
    write a wake or a run state where no reader looks."""
    home = Path("/h/.ackdeck")
    rdir = locations.run_dir(home, "job", "20261207T000000000-abcdef")
    assert locations.run_dir(str(home), "job", rdir.name) == str(rdir)
    for of_run in (
        locations.run_meta,
        locations.run_output,
        locations.run_monitors,
        locations.run_lock,
        locations.supervisor_lock,
        locations.supervisor_log,
        locations.kill_requested,
        locations.shown_dir,
    ):
        got = of_run(str(rdir))
        assert type(got) is str and got == str(of_run(rdir)), of_run
    for of_session in (locations.shown_state, locations.shown_lock):
        assert of_session(str(rdir), "s") == str(of_session(rdir, "s"))
    lease = locations.shown_lease(rdir, "s", "1.abcd1234")
    assert locations.shown_lease(str(rdir), "s", "1.abcd1234") == str(lease)
    assert locations.lease_temp(str(lease)) == str(locations.lease_temp(lease))
    for of_home in (locations.wake_session_dir, locations.wake_lock):
        assert of_home(str(home), "s") == str(of_home(home, "s"))
    record = locations.wake_record(home, "s", "job")
    assert locations.wake_record(str(home), "s", "job") == str(record)
    assert locations.corrupt_aside(str(record), 1.5) == str(locations.corrupt_aside(record, 1.5))
    assert type(locations.corrupt_aside(record, 1.5)) is type(record)  # Paths stay Paths
