"""ackdeck installs as one top-level import name, `ackdeck`, and has a version.

The wheel is built for real from this checkout and installed into a throwaway venv next to
distributions that own the generic names ackdeck used to install (`core`, `tui`): PyPI's
`tui` 1.1.1 (built into .cache/wheels by `make`, offline here) and a package with a top-level
`core` built in the test. ackdeck's own dependencies come from the project's venv through a
path entry, so nothing is fetched at test time.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "src" / "ackdeck"  # the package (a src/ layout)
TUI_WHEELS = sorted((REPO / ".cache" / "wheels").glob("tui-1.1.1-*.whl"))
BUILD_TIMEOUT = 600  # a generous bound: only a hung build reaches it


def _run(*args: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    kwargs.setdefault("timeout", BUILD_TIMEOUT)
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [str(a) for a in args], capture_output=True, text=True, **kwargs
    )


def _build_wheel(project: Path, out: Path, name: str) -> Path:
    """The wheel of `project`, built for real by pip (offline: no build isolation)."""
    built = _run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
        "-w", out, project,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (found,) = out.glob(f"{name}-*.whl")
    return found


def _tracked() -> list[str]:
    return [n for n in _run("git", "ls-files", "-z", cwd=REPO).stdout.split("\0") if n]


def _copy_of_checkout(out: Path) -> Path:
    """A copy of the tracked files, so a build leaves the checkout's build/ and egg-info as
    they are (a build in place would leave both behind)."""
    src = out / "src"
    for name in _tracked():
        target = src / name
        target.parent.mkdir(parents=True, exist_ok=True)
        origin = REPO / name
        if origin.is_symlink():
            target.symlink_to(os.readlink(origin))
        elif origin.is_file():
            target.write_bytes(origin.read_bytes())
    return src


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    return _build_wheel(_copy_of_checkout(out), out, "ackdeck")


def test_the_sdist_holds_the_repository_and_its_tests_pass_from_it(tmp_path: Path) -> None:
    """The sdist is the repository (MANIFEST.in): the same files, no symlink, and a part of the
    suite runs from it unpacked (it used to copy linked files and fail two tests)."""
    if _run("git", "rev-parse", "--git-dir", cwd=REPO).returncode != 0:
        pytest.skip("not a git checkout: nothing to compare the sdist with")
    project = _copy_of_checkout(tmp_path / "build")
    built = _run(
        sys.executable, "-c",
        "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))",
        tmp_path, cwd=project,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    archive = tmp_path / built.stdout.split()[-1]
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        assert not [m.name for m in members if m.issym() or m.islnk()]
        top = members[0].name.split("/")[0]
        names = {m.name.split("/", 1)[1] for m in members if m.isfile()}
        tar.extractall(tmp_path / "unpacked", filter="data")
    added = {"PKG-INFO", "setup.cfg"} | {n for n in names if ".egg-info/" in n}
    assert names - added == set(_tracked())
    unpacked = tmp_path / "unpacked" / top
    ran = _run(
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
        "tests/test_ledger_decisions.py", "tests/test_bytes.py", "tests/test_rooms.py",
        cwd=unpacked,
        env={**os.environ, "PYTHONPATH": f"{unpacked / 'src'}{os.pathsep}{unpacked}"},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert re.search(r"\d+ passed", ran.stdout)


def _top_level_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        return {
            name.split("/")[0]
            for name in z.namelist()
            if ".dist-info/" not in name and ".data/" not in name
        }


def test_the_wheel_has_exactly_one_top_level_name(wheel: Path) -> None:
    assert _top_level_names(wheel) == {"ackdeck"}
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        top_level = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        assert z.read(top_level).decode().split() == ["ackdeck"]
    # Every package folder of src/ackdeck/core and src/ackdeck/tui is in the wheel (a folder
    # left out of the package list would import fine from the checkout and fail once
    # installed).
    for folder in ("core", "tui"):
        for init in (PKG / folder).rglob("__init__.py"):
            inner = init.relative_to(PKG.parent).as_posix()
            assert inner in names, inner
    assert "ackdeck/tui/app.tcss" in names


def test_the_wheel_declares_its_metadata(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith("METADATA"))).decode()
    assert "License-Expression: MIT" in meta
    assert "Project-URL: " in meta and "Classifier: Programming Language :: Python :: 3.13" in meta
    requires = [line for line in meta.splitlines() if line.startswith("Requires-Dist: ")]
    # Users share an environment with other tools: ranges, not pins (the test extra pins).
    user_pins = [r for r in requires if "==" in r and "extra ==" not in r]
    assert user_pins == []


def _core_distribution(where: Path) -> Path:
    """A distribution that owns a top-level `core` package, as many in the wild do."""
    project = where / "othercore"
    (project / "core").mkdir(parents=True)
    (project / "core" / "__init__.py").write_text("SOMEONE_ELSES = True\n")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "othercore"\nversion = "1.0"\n'
        '[tool.setuptools]\npackages = ["core"]\n'
    )
    return _build_wheel(project, where, "othercore")


@pytest.mark.skipif(not TUI_WHEELS, reason="PyPI's tui is not in .cache/wheels (run make)")
def test_installed_next_to_pypis_tui_and_a_core_package_every_command_works(
    wheel: Path, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    assert _run(sys.executable, "-m", "venv", venv).returncode == 0
    py = venv / "bin" / "python"
    site = Path(
        _run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    )
    # ackdeck's dependencies, from the project's venv, after the throwaway venv's own packages.
    (site / "zz_ackdeck_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    other_core = _core_distribution(tmp_path)
    for dist in (wheel, TUI_WHEELS[-1], other_core):
        done = _run(py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", dist)
        assert done.returncode == 0, done.stderr
        assert "overwrit" not in done.stderr.lower(), done.stderr
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    ackdeck = venv / "bin" / "ackdeck"
    for args in (["--help"], ["demo", "--help"], ["tui", "--help"], ["room", "--help"]):
        out = _run(ackdeck, *args, env=env, cwd=tmp_path)
        assert out.returncode == 0, (args, out.stderr)
        assert "usage: ackdeck" in out.stdout
    # The other distributions still own their names. (PyPI's tui is Python 2 code: importing
    # it is a SyntaxError, which is what every ackdeck command died of when both installed a
    # top-level `tui`.)
    probe = (
        "import core, importlib.util, ackdeck.tui.app\n"
        "print(core.SOMEONE_ELSES, importlib.util.find_spec('tui').origin)"
    )
    out = _run(py, "-c", probe, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("True ")
    theirs = Path(out.stdout.split()[1]).read_text(errors="replace")
    assert "BadNumberOfArgumentsError" in theirs
    # Uninstalling them removes none of ackdeck's files.
    gone = _run(py, "-m", "pip", "uninstall", "-y", "-q", "tui", "othercore")
    assert gone.returncode == 0, gone.stderr
    out = _run(ackdeck, "demo", "--help", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr


def test_version_comes_from_the_package_metadata() -> None:
    from importlib.metadata import version

    out = _run(sys.executable, "-m", "ackdeck.core.cli", "--version", cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"ackdeck {version('ackdeck')}\n"
    assert re.fullmatch(r"\d+\.\d+\.\d+", version("ackdeck"))
