"""One exception hierarchy. Every message is a single line a user can act on."""

from __future__ import annotations


class AckdeckError(Exception):
    """Base class. `exit_code` is what the CLI exits with."""

    exit_code = 1


class InvalidName(AckdeckError):
    """A session, process or room name that could escape its directory."""


class InvalidInput(AckdeckError):
    """A line, regex, option or config value that cannot be used."""


class BadMailbox(InvalidInput):
    """A Claude Code team mailbox in a shape ackdeck was not written for: one line naming the
    file and what was expected; nothing is written to it."""


class BadRecord(InvalidInput):
    """A file of another tool's (a Claude Code session registry record, a task) that is not
    in the shape it writes, with the reason in one line; skipped, never written."""


class RoomUnavailable(AckdeckError):
    """The room file or its directory cannot be read or written."""


class RedisUnreachable(RoomUnavailable):
    """A redis room's server did not answer (refused, timed out, connection lost)."""


class UnsafeSidecar(AckdeckError):
    """The sidecar directory is a symlink or owned by someone else."""


class CorruptState(AckdeckError):
    """A ledger, receipt or wake file failed to parse. It is kept on disk, never deleted."""


class NotRegular(CorruptState):
    """A state file replaced by a directory, FIFO, socket, device or symlink. It is never
    opened for reading (a FIFO would block the reader for good) and is left in place."""


class ColdAck(AckdeckError):
    """An ack without a prior read. Nothing was written. `unread` is how many complete lines
    the room held when it refused (all of them kept: a refused ack's `preserved`)."""

    exit_code = 3

    def __init__(self, message: str, unread: int = 0, why: str = "") -> None:
        super().__init__(message)
        self.unread = unread
        self.why = why  # what was missing ("no read", "another reader"), for a door's words


class TokenRefused(AckdeckError):
    """done / extend / release of a queue room's task with a token that is not the line's
    current lease (superseded by a later claim, unknown, or its line finished): nothing was
    changed. Its own exit code, so a script can tell "drop this work, it is someone else's
    now" from other errors (core/rooms/queue.py)."""

    exit_code = 4


class ProcessError(AckdeckError):
    """A monitored process could not be started, found or signalled."""


class NotDelivered(AckdeckError):
    """A read whose lines could not be written to the reader. No receipt was recorded."""


class OutOfMemory(AckdeckError):
    """An operation ran out of memory (a page, or one very long line, did not fit). What it
    was doing was not recorded: no receipt, nothing removed."""


class PaneGone(AckdeckError):
    """The tmux pane does not exist (or the tmux server is not running)."""


class LockTimeout(AckdeckError):
    """A lock could not be taken in time."""


class MailboxLocked(LockTimeout):
    """A Claude Code team mailbox's lock stayed held through Claude Code's own retries."""


class LockLost(AckdeckError):
    """A Claude Code mailbox lock was taken over (judged stale) while ackdeck held it."""


class RecordError(ValueError):
    """A state file or value that does not fit its record's schema (core/base/jsonfields.py).

    A ValueError, not an AckdeckError: the module that loads the file turns it into
    CorruptState with the file's path, or skips the file, as that file's rules say."""


class UnmodelledPattern(Exception):
    """Internal to core/monitors/literals.py: a pattern uses something its literal parser does not
    model soundly, so it offers no literal prefilter. Never reaches a user."""


class UsageError(AckdeckError):
    """A command line the CLI could not parse: one line on stderr, exit 1, and with --json
    the error shape on stdout, like any other error."""


class ReportLost(AckdeckError):
    """The command did what it was asked (`done`), but the report of it could not be written:
    said as such, so that a caller retrying on exit 1 knows not to do it twice."""

    def __init__(self, done: str, cause: OSError | ValueError) -> None:
        if isinstance(cause, BrokenPipeError):
            why = "broken pipe"
        elif isinstance(cause, OSError):
            why = str(cause.strerror or cause)
        else:
            why = "stdout is closed"  # ValueError: a write to a closed file object
        super().__init__(f"{done}, but its report could not be written: {why}")
        self.done, self.cause = done, cause


class FleetUnreachable(AckdeckError):
    """The fleet's Redis did not answer (or refused): this host works alone meanwhile."""


class NoProof(Exception):  # noqa: N818 - a reason, not a failure: the ack is an estimate
    """A client's transcript cannot prove what its model was shown (missing, cut, damaged):
    the one-line reason an ack is an estimate (core/clients/claude_code/transcript.py). Never
    shown as an error: the ack goes on as an estimate and says why."""
