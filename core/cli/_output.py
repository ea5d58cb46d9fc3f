"""Shared output helpers for CLI handlers."""

from __future__ import annotations

import json
import sys
from typing import Any


def emit_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")


def text(line: bytes) -> str:
    # Bytes are stored exactly; they are only decoded, with replacement, to be shown.
    return line.decode("utf-8", errors="replace")
