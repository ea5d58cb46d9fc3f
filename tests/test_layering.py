"""core is a library: it must never pull in Textual (the dashboard depends on core, not back)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_core_never_imports_textual() -> None:
    code = (
        "import sys, pkgutil, importlib, core\n"
        "for m in pkgutil.walk_packages(core.__path__, 'core.'):\n"
        "    if m.name.endswith('__main__'): continue\n"
        "    importlib.import_module(m.name)\n"
        "bad = sorted(n for n in sys.modules if n == 'textual' or n.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"core imported Textual modules: {out.stdout.strip()}"


def test_core_sources_do_not_mention_textual_imports() -> None:
    offenders = [
        str(p.relative_to(REPO))
        for p in (REPO / "core").rglob("*.py")
        if "import textual" in p.read_text() or "from textual" in p.read_text()
    ]
    assert offenders == []
