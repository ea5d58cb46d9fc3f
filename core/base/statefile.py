"""ackdeck's small JSON state files (run meta, monitor state): parse one into its Record, write
one atomically. Kept apart from the room ledger so that a run's supervisor, which reads and
writes only these, imports none of the ledger's machinery."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ackdeck.core.base import atomic
from ackdeck.core.base.record import Record
from ackdeck.core.errors import CorruptState, RecordError

if TYPE_CHECKING:
    from typing import TypeVar

    M = TypeVar("M", bound=Record)


def load_model(path: Path, model: type[M], *, hint: str = "") -> M | None:
    """Parse a JSON state file; None if it does not exist. A bad file raises and is kept."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise CorruptState(f"state file {path} is a directory{hint}") from None
    try:
        return model.model_validate_json(raw)
    except RecordError as exc:
        first = str(exc)
        raise CorruptState(
            f"corrupt state file {path} ({first}); it was left in place{hint}"
        ) from None


def store_model(path: Path, value: Record, *, fsync: bool = False) -> None:
    # State files are written without fsync by default: losing one to a power cut only makes
    # the next operation see a "foreign" change and start a new epoch, which redelivers and
    # never deletes. kill -9 cannot lose them (the page cache survives the process).
    atomic.atomic_write(path, value.model_dump_json().encode(), fsync=fsync)
