"""`ackdeck` imports argparse without gettext and locale where gettext could find no catalog
(core/cli/__init__.py): its messages, help and errors are exactly those of real gettext, and a
later `import gettext` gets the real module. Real interpreters."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO

# Runs main() the way the console script does, or with gettext imported first (then ackdeck.core.cli
# leaves argparse alone and real gettext translates).
PROBE = (
    "import sys\n"
    "if sys.argv[1] == 'real':\n"
    "    import gettext\n"
    "from ackdeck.core.cli import main\n"
    "try:\n"
    "    code = main(sys.argv[2:])\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    "print('gettext:', type(sys.modules.get('gettext')).__name__,\n"
    "      hasattr(sys.modules.get('gettext'), 'translation'), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _run(mode: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, LANGUAGE="de:fr", LANG="de_DE.UTF-8", COLUMNS="100")
    return subprocess.run(
        [sys.executable, "-c", PROBE, mode, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _no_catalog_dir() -> bool:
    return not os.path.isdir(os.path.join(sys.base_prefix, "share", "locale"))


def test_help_and_errors_read_the_same_as_with_real_gettext() -> None:
    for args in (["room", "--help"], ["room", "push"], ["room", "stauts"], ["hooks", "-h"], []):
        fast, real = _run("fast", *args), _run("real", *args)
        assert fast.returncode == real.returncode, args
        assert fast.stdout == real.stdout, args
        # The last stderr line says which gettext was loaded; the rest is the message.
        assert fast.stderr.splitlines()[:-1] == real.stderr.splitlines()[:-1], args
        assert real.stderr.splitlines()[-1] == "gettext: module True"


def test_gettext_is_not_loaded_by_a_command_unless_a_catalog_could_exist() -> None:
    out = _run("fast", "room", "push")
    last = out.stderr.splitlines()[-1]
    assert last == ("gettext: NoneType False" if _no_catalog_dir() else "gettext: module True")


def test_a_later_import_of_gettext_gets_the_real_module() -> None:
    code = (
        "import ackdeck.core.cli, gettext; "
        "print(gettext.translation.__module__, gettext.gettext('x'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert (out.returncode, out.stdout) == (0, "gettext x\n")
