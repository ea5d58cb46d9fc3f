"""Rooms: notification files with a consumed-only ack.

Protocol (see DESIGN.md "Rooms"):
- push appends under the *shared* sidecar lock; ack rewrites under the *exclusive* one;
- read returns complete lines and records a receipt (the exact bytes) per session;
- ack removes only the receipt's bytes still at the head, then sweeps the old inode for bytes
  that unlocked producers (`printf >> file`) appended after the read.

Bytes are the truth: nothing here decodes text.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from . import _atomic
from . import ledger as L
from ._locks import locked
from .errors import (
    AckdeckError,
    ColdAck,
    CorruptState,
    InvalidInput,
    RoomUnavailable,
    UnsafeSidecar,
)
from .names import check_name

Clock = Callable[[], float]

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ReadResult:
    lines: list[bytes]
    start: int
    end: int
    epoch: int


@dataclass(frozen=True)
class AckResult:
    mode: L.AckMode
    acked: int
    preserved: int
    message: str
    lines: list[bytes] | None = None  # only for ack-all


@dataclass(frozen=True)
class SessionStatus:
    in_flight: int
    unread: int


@dataclass(frozen=True)
class RoomStatus:
    path: Path
    exists: bool
    pending: int
    partial_bytes: int
    acked_total: int
    preserved_total: int
    pushed_total: int
    epoch: int
    last_ack_at: float | None
    sessions: dict[str, SessionStatus] = field(default_factory=dict)


class Room:
    """One notification file and its sidecar directory. Cheap to construct; holds no fds."""

    def __init__(self, path: str | os.PathLike[str], *, clock: Clock = time.time) -> None:
        p = Path(path)
        if "\0" in str(p):
            raise InvalidInput("room path contains a NUL byte")
        self.path = p.absolute()
        self.sidecar = self.path.with_name(f".{self.path.name}.ackdeck")
        self._clock = clock

    # ----- sidecar layout -------------------------------------------------------------
    @property
    def lock_file(self) -> Path:
        return self.sidecar / "lock"

    @property
    def ledger_file(self) -> Path:
        return self.sidecar / "ledger.json"

    @property
    def audit_file(self) -> Path:
        return self.sidecar / "audit.jsonl"

    def receipt_file(self, session: str) -> Path:
        return self.sidecar / "receipts" / f"{check_name(session)}.rcpt"

    def _ensure_sidecar(self, *, create: bool) -> bool:
        """Check (and maybe create) the sidecar; False if it does not exist and create=False."""
        try:
            st = os.lstat(self.sidecar)
        except FileNotFoundError:
            if not create:
                return False
            if not self.path.parent.is_dir():
                raise RoomUnavailable(f"room directory {self.path.parent} does not exist") from None
            try:
                os.mkdir(self.sidecar, 0o700)
            except FileExistsError:
                pass  # another process created it first; the checks below still apply
            except PermissionError:
                raise RoomUnavailable(
                    f"cannot create {self.sidecar}: directory {self.path.parent} is not writable"
                ) from None
            try:
                st = os.lstat(self.sidecar)
            except FileNotFoundError:
                raise RoomUnavailable(
                    f"sidecar {self.sidecar} vanished while being created"
                ) from None
        # A symlinked or foreign-owned sidecar could redirect our writes or feed us forged
        # receipts, so refuse rather than follow it.
        if stat.S_ISLNK(st.st_mode):
            raise UnsafeSidecar(f"refusing sidecar {self.sidecar}: it is a symlink")
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafeSidecar(f"refusing sidecar {self.sidecar}: it is not a directory")
        if st.st_uid != os.geteuid():
            raise UnsafeSidecar(f"refusing sidecar {self.sidecar}: owned by uid {st.st_uid}")
        (self.sidecar / "receipts").mkdir(mode=0o700, exist_ok=True)
        return True

    @contextmanager
    def _lock(self, *, shared: bool) -> Iterator[None]:
        self._ensure_sidecar(create=True)
        try:
            with locked(self.lock_file, shared=shared):
                yield
        except PermissionError as exc:
            raise RoomUnavailable(f"cannot lock {self.lock_file}: {exc.strerror}") from None

    # ----- state --------------------------------------------------------------------------
    def _ledger(self) -> L.Ledger:
        return L.load_model(self.ledger_file, L.Ledger) or L.Ledger()

    def _receipt(self, session: str) -> L.Receipt | None:
        path = self.receipt_file(session)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        return L.decode_receipt(raw, path)

    def _open(self) -> int | None:
        try:
            return os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        except PermissionError:
            raise RoomUnavailable(f"cannot read room {self.path}: permission denied") from None
        except IsADirectoryError:
            raise RoomUnavailable(f"room {self.path} is a directory") from None

    def _settled_ledger(self, fd: int, *, can_write: bool) -> tuple[L.Ledger, bool]:
        """The ledger reconciled with the open file. Returns (ledger, changed).

        Persists the change only when `can_write` (the exclusive lock is held).
        """
        st = os.fstat(fd)
        head = os.pread(fd, L.HEAD_BYTES, 0)
        ledger = self._ledger()
        verdict = L.classify(ledger, st.st_dev, st.st_ino, st.st_size, head)
        if verdict == "same":
            return ledger, False
        current = L.identity_of(st.st_dev, st.st_ino, st.st_size, head)
        settled = L.settle(ledger, verdict, current)
        if can_write:
            L.store_model(self.ledger_file, settled)
        return settled, True

    # ----- read ---------------------------------------------------------------------------
    def read(self, session: str) -> ReadResult:
        """Every complete line in the room; records the session's receipt (replacing the old)."""
        check_name(session)
        if not self.path.exists() and not self._ensure_sidecar(create=False):
            return ReadResult([], 0, 0, 0)
        shared = True
        while True:
            with self._lock(shared=shared):
                fd = self._open()
                if fd is None:
                    ledger = self._ledger()
                    return ReadResult([], ledger.base, ledger.base, ledger.epoch)
                try:
                    ledger, changed = self._settled_ledger(fd, can_write=not shared)
                    if changed and shared:
                        shared = False  # retry under the exclusive lock to record the change
                        continue
                    data = _complete_prefix(_pread_all(fd, os.fstat(fd).st_size))
                finally:
                    os.close(fd)
                header = L.ReceiptHeader(
                    session=session,
                    epoch=ledger.epoch,
                    start=ledger.base,
                    end=ledger.base + len(data),
                    lines=data.count(b"\n"),
                    sha256=L.sha256(data),
                    read_at=self._clock(),
                )
                # Receipts are not fsynced: losing one only turns the next ack into a refused
                # cold ack (the agent re-reads); it can never cause a deletion.
                _atomic.atomic_write(
                    self.receipt_file(session),
                    L.encode_receipt(L.Receipt(header, data)),
                    fsync=False,
                )
                return ReadResult(
                    data.splitlines(keepends=False), header.start, header.end, header.epoch
                )

    # ----- ack ----------------------------------------------------------------------------
    def ack(self, session: str, *, all: bool = False) -> AckResult:  # noqa: A002 - CLI flag name
        """Remove exactly what `session` consumed (or, with all=True, every complete line)."""
        check_name(session)
        if not self.path.exists() and not self._ensure_sidecar(create=False):
            return AckResult("noop", 0, 0, f"room {self.path} does not exist; nothing to ack")
        with self._lock(shared=False):
            _atomic.clean_stale_temps(self.path)
            fd = self._open()
            if fd is None:
                return AckResult("noop", 0, 0, f"room {self.path} does not exist; nothing to ack")
            try:
                return self._ack_locked(fd, session, all)
            finally:
                os.close(fd)

    def _ack_locked(self, fd: int, session: str, ack_all: bool) -> AckResult:
        ledger, _ = self._settled_ledger(fd, can_write=True)
        size = os.fstat(fd).st_size
        receipt = None if ack_all else self._receipt(session)
        if ack_all:
            content = _pread_all(fd, size)
            dropped = _complete_prefix(content)
            plan = L.AckPlan("all", len(dropped))
        elif receipt is None or receipt.header.acked:
            unread = _count_lines(fd, size)
            raise ColdAck(
                f"refused: no unacked read by session {session!r} ({unread} unread line(s)); "
                "read the room first (room read / room_list_new), then ack, or ack with --all"
            )
        else:
            head = os.pread(fd, max(0, receipt.header.end - ledger.base), 0)
            plan = L.plan_ack(receipt.header, receipt.data, ledger.epoch, ledger.base, head)
            dropped = head[: plan.drop]
        if plan.mode in ("stale", "noop", "refused"):
            if plan.mode == "stale":
                # Useless now; keep its end as a cursor so unread counts stay meaningful.
                self._mark_receipt_acked(receipt)
                self._audit(session, plan.mode, ledger, 0, 0, b"")
                return AckResult(
                    "stale",
                    0,
                    _count_lines(fd, size),
                    f"stale: {plan.reason}; nothing was removed. Read the room again, then ack",
                )
            self._mark_receipt_acked(receipt)
            return AckResult(plan.mode, 0, _count_lines(fd, size), plan.reason)
        return self._rewrite(fd, size, ledger, session, plan, dropped, receipt)

    def _rewrite(
        self,
        fd: int,
        size: int,
        ledger: L.Ledger,
        session: str,
        plan: L.AckPlan,
        dropped: bytes,
        receipt: L.Receipt | None,
    ) -> AckResult:
        st = os.fstat(fd)
        keep_len = size - plan.drop
        try:
            tmp = _atomic.write_temp(
                self.path,
                _pread_chunks(fd, plan.drop, size),
                mode=stat.S_IMODE(st.st_mode),
                owner=(st.st_uid, st.st_gid),
            )
        except OSError as exc:
            raise _write_error(self.path, exc) from None
        try:
            tst = os.stat(tmp)
            head = _read_head(tmp)
            new_identity = L.identity_of(tst.st_dev, tst.st_ino, keep_len, head)
            new_base = ledger.base + plan.drop
            # Intent first: if we die after the rename, the next caller recognises the new
            # inode as ours instead of starting a new epoch.
            L.store_model(
                self.ledger_file,
                ledger.model_copy(
                    update={"pending": L.PendingRewrite(identity=new_identity, base=new_base)}
                ),
            )
        except BaseException:
            _atomic._unlink_quietly(tmp)
            raise
        _atomic.replace(tmp, self.path, fsync=False)
        # Unlocked producers that opened the path before the rename wrote into the old inode:
        # carry those bytes over. Sweep once now and once after the directory fsync (which
        # takes long enough for a `printf >>` in flight to finish); see README "residual window".
        swept = self._sweep(fd, size)
        _atomic.fsync_dir(self.path.parent)
        swept += self._sweep(fd, size + swept)
        remaining = self._count_remaining_lines()
        now = self._clock()
        committed = ledger.model_copy(
            update={
                "base": ledger.base + plan.drop,
                "identity": new_identity,
                "pending": None,
                "acked_total": ledger.acked_total + dropped.count(b"\n"),
                "preserved_total": ledger.preserved_total + remaining,
                "last_ack_at": now,
                "last_ack_session": session,
            }
        )
        L.store_model(self.ledger_file, committed)
        acked = dropped.count(b"\n")
        self._audit(session, plan.mode, ledger, acked, remaining, dropped)
        self._mark_receipt_acked(receipt)
        lines = dropped.splitlines() if plan.mode == "all" else None
        msg = f"acked {acked} line(s); preserved {remaining} line(s) that arrived or remain unread"
        return AckResult(plan.mode, acked, remaining, msg, lines)

    def _sweep(self, old_fd: int, offset: int) -> int:
        """Append bytes written to the old inode at or after `offset` to the new file."""
        late = _pread_all_from(old_fd, offset)
        if not late:
            return 0
        out = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            _write_all(out, late)
            os.fsync(out)
        finally:
            os.close(out)
        return len(late)

    def _count_remaining_lines(self) -> int:
        fd = self._open()
        if fd is None:
            return 0
        try:
            return _count_lines(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)

    def _mark_receipt_acked(self, receipt: L.Receipt | None) -> None:
        if receipt is None:
            return
        header = receipt.header.model_copy(update={"acked": True})
        cursor = L.Receipt(
            header.model_copy(update={"start": header.end, "sha256": L.sha256(b"")}), b""
        )
        _atomic.atomic_write(
            self.receipt_file(header.session), L.encode_receipt(cursor), fsync=False
        )

    def _audit(
        self, session: str, mode: str, ledger: L.Ledger, acked: int, preserved: int, dropped: bytes
    ) -> None:
        entry = {
            "at": self._clock(),
            "session": session,
            "mode": mode,
            "epoch": ledger.epoch,
            "start": ledger.base,
            "end": ledger.base + len(dropped),
            "acked": acked,
            "preserved": preserved,
            "sha256": L.sha256(dropped),
        }
        # One O_APPEND write per entry, under the exclusive lock: entries never interleave.
        fd = os.open(self.audit_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _write_all(fd, (json.dumps(entry) + "\n").encode())
        finally:
            os.close(fd)

    # ----- push ---------------------------------------------------------------------------
    def push(self, line: str | bytes) -> int:
        """Append one line under the shared lock; return the logical offset where it starts."""
        data = line.encode() if isinstance(line, str) else bytes(line)
        if b"\n" in data or b"\r\n" in data:
            raise InvalidInput("a pushed line must not contain a newline")
        if b"\0" in data:
            raise InvalidInput("a pushed line must not contain a NUL byte")
        data += b"\n"
        with self._lock(shared=True):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as exc:
                raise _write_error(self.path, exc) from None
            try:
                # One write(2) with O_APPEND: concurrent pushers never interleave.
                try:
                    _write_all(fd, data)
                except OSError as exc:
                    raise _write_error(self.path, exc) from None
                end = os.lseek(fd, 0, os.SEEK_CUR)
            finally:
                os.close(fd)
            return self._ledger().base + end - len(data)

    # ----- status -------------------------------------------------------------------------
    def status(self) -> RoomStatus:
        """Counters for the room and every session that has read it. Never writes."""
        has_sidecar = self._ensure_sidecar(create=False)
        ledger = self._ledger() if has_sidecar else L.Ledger()
        fd = self._open()
        if fd is None:
            return RoomStatus(
                self.path,
                False,
                0,
                0,
                ledger.acked_total,
                ledger.preserved_total,
                ledger.base,
                ledger.epoch,
                ledger.last_ack_at,
                {},
            )
        try:
            if has_sidecar:
                with locked(self.lock_file, shared=True):
                    return self._status_locked(fd)
            return self._status_locked(fd)
        finally:
            os.close(fd)

    def _status_locked(self, fd: int) -> RoomStatus:
        ledger, _ = self._settled_ledger(fd, can_write=False)
        size = os.fstat(fd).st_size
        content = _pread_all(fd, size)
        complete = _complete_prefix(content)
        sessions: dict[str, SessionStatus] = {}
        receipts_dir = self.sidecar / "receipts"
        names = sorted(p.stem for p in receipts_dir.glob("*.rcpt")) if receipts_dir.is_dir() else []
        for name in names:
            try:
                receipt = self._receipt(name)
            except (CorruptState, AckdeckError):
                continue
            if receipt is None:
                continue
            h = receipt.header
            if h.epoch != ledger.epoch:
                sessions[name] = SessionStatus(0, complete.count(b"\n"))
                continue
            read_to = max(0, min(len(complete), h.end - ledger.base))
            in_flight = 0 if h.acked else complete[:read_to].count(b"\n")
            sessions[name] = SessionStatus(in_flight, complete[read_to:].count(b"\n"))
        return RoomStatus(
            self.path,
            True,
            complete.count(b"\n"),
            len(content) - len(complete),
            ledger.acked_total,
            ledger.preserved_total,
            ledger.base + size,
            ledger.epoch,
            ledger.last_ack_at,
            sessions,
        )

    # ----- wait ---------------------------------------------------------------------------
    def wait(
        self, session: str, timeout: float | None = None, stop: Callable[[], bool] | None = None
    ) -> bool:
        """Block until `session` has unread complete lines (True) or the timeout passes (False).

        Watches the directory, not the file: an ack renames a new inode over the file and a
        watch on the old one would go silent.
        """
        import watchfiles  # local: only wait needs the watcher

        check_name(session)
        if not self.path.parent.is_dir():
            raise RoomUnavailable(f"room directory {self.path.parent} does not exist")
        deadline = None if timeout is None else time.monotonic() + timeout
        name = self.path.name
        while True:
            if self._unread(session) > 0:
                return True
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            # Short rust_timeout bounds the check-then-watch race to a fraction of a second.
            step_ms = 250 if remaining is None else max(10, min(250, int(remaining * 1000)))
            for _ in watchfiles.watch(
                self.path.parent,
                watch_filter=lambda _c, p: os.path.basename(p) == name,
                debounce=20,
                step=10,
                rust_timeout=step_ms,
                yield_on_timeout=True,
                raise_interrupt=False,
            ):
                break
            if stop is not None and stop():
                return False

    def _unread(self, session: str) -> int:
        st = self.status()
        if session in st.sessions:
            return st.sessions[session].unread
        return st.pending


def format_poller_line(room: str, sender: str, body: str, ts: float, *, utc: bool = True) -> str:
    """The common poller line `[ts] [room] sender: body`, flattened to one line."""
    stamp = time.strftime(
        "%Y-%m-%dT%H:%M:%SZ" if utc else "%Y-%m-%dT%H:%M:%S",
        time.gmtime(ts) if utc else time.localtime(ts),
    )
    flat = " ".join(body.replace("\0", " ").splitlines())
    return f"[{stamp}] [{room}] {sender}: {flat}"


# ----- byte helpers ----------------------------------------------------------------------
def _complete_prefix(data: bytes) -> bytes:
    """The part of `data` up to and including its last newline (the complete lines)."""
    cut = data.rfind(b"\n")
    return data[: cut + 1] if cut >= 0 else b""


def _pread_all(fd: int, size: int) -> bytes:
    parts: list[bytes] = []
    offset = 0
    while offset < size:
        chunk = os.pread(fd, min(_CHUNK * 16, size - offset), offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


def _pread_all_from(fd: int, offset: int) -> bytes:
    parts: list[bytes] = []
    while True:
        chunk = os.pread(fd, _CHUNK, offset)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        offset += len(chunk)


def _pread_chunks(fd: int, start: int, end: int) -> Iterator[bytes]:
    offset = start
    while offset < end:
        chunk = os.pread(fd, min(_CHUNK * 4, end - offset), offset)
        if not chunk:
            return
        yield chunk
        offset += len(chunk)


def _count_lines(fd: int, size: int) -> int:
    return sum(chunk.count(b"\n") for chunk in _pread_chunks(fd, 0, size))


def _read_head(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(L.HEAD_BYTES)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_error(path: Path, exc: OSError) -> AckdeckError:
    if exc.errno == errno.ENOSPC:
        return RoomUnavailable(f"no space left on device writing {path}; the room is unchanged")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return RoomUnavailable(
            f"cannot write {path} or its directory: {exc.strerror}; the room is unchanged"
        )
    return RoomUnavailable(f"cannot write {path}: {exc.strerror}; the room is unchanged")
