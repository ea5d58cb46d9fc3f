"""SHA-256 without loading OpenSSL for small inputs.

`import hashlib` loads OpenSSL's libcrypto: ~3.5 ms and ~3.7 MiB of resident memory in every
process (each hook, each producer's `room push`, each run's supervisor), while what ackdeck
hashes on most commands is a few KiB (ledger slots, receipts of a short read). CPython's own
SHA-256 (`_sha256`, `_sha2` from 3.12) gives the same digest and loads in microseconds.
OpenSSL is several times faster on large inputs (SHA-NI) and hashes them without holding the
GIL (ack_stream hashes big reads in a worker thread), so from LARGE bytes on hashlib is used,
imported then. Once it is imported (`use_openssl`, or a large input) it hashes everything:
loading it is the only cost it has over the builtin, and a status over thousands of rooms
hashes each room's 4 KiB head (13.6 us with the builtin, 2.6 us with OpenSSL).
"""

from __future__ import annotations

import sys

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

try:
    from _sha2 import sha256 as _builtin_sha256  # 3.12+
except ImportError:
    try:
        from _sha256 import sha256 as _builtin_sha256  # 3.11
    except ImportError:  # a build without CPython's own hashes: hashlib it is
        _builtin_sha256 = None

LARGE = 64 << 10  # bytes; below this the builtin costs less than importing OpenSSL
# Bytes of many small inputs from which importing OpenSSL pays (the builtin hashes ~0.3 MB/ms,
# OpenSSL ~1.5 MB/ms here: about 1 MiB saves the import; twice that to be sure it does).
MANY = 2 << 20


def new_sha256(size: int) -> Any:
    """An empty SHA-256 hasher (update/hexdigest) for about `size` bytes of input."""
    loaded = sys.modules.get("hashlib")
    if loaded is not None:
        return loaded.sha256()
    if size < LARGE and _builtin_sha256 is not None:
        return _builtin_sha256()
    import hashlib

    return hashlib.sha256()


def use_openssl(total: int) -> None:
    """Load OpenSSL's SHA-256 now if the caller is about to hash `total` bytes in all (many
    small inputs: each below LARGE, but together worth the ~3.5 ms import)."""
    if total >= MANY:
        import hashlib  # noqa: F401 (new_sha256 uses it from now on)


def sha256_hex(data: bytes | bytearray | memoryview) -> str:
    """The hex SHA-256 of `data` (the same digest whichever implementation computes it)."""
    h = new_sha256(len(data))
    h.update(data)
    return str(h.hexdigest())


# ----- line digests -----------------------------------------------------------------------
# Bytes of one line's digest in a receipt (core/rooms/file/receipts.py): BLAKE2s cut to 128 bits.
# A receipt keeps these instead of the lines' text; an ack matches lines by them. 128 bits
# keep even a crafted pair of colliding lines out of reach (a birthday search of 2^64), where
# 64 bits would not; BLAKE2s is the cheapest cryptographic hash per short input here (a
# receipt costs one call per line), and CPython's own `_blake2` loads without OpenSSL.
LINE_DIGEST = 16


def line_digests(lines: Iterable[bytes]) -> bytes:
    """The LINE_DIGEST-byte digests of `lines` (each without its newline), concatenated."""
    # Imported here: a push hashes its ledger slot (sha256_hex) but never a line.
    # functools.partial and operator.methodcaller are these C ones; `functools` imports
    # `collections` (with `keyword`, `operator`, `reprlib`) and `operator` is Python code
    # (~0.25 ms to import): a turn's read need neither.
    from _functools import partial
    from _operator import methodcaller

    try:
        from _blake2 import blake2s
    except ImportError:  # a build without CPython's own hashes
        from hashlib import blake2s

    one = partial(blake2s, digest_size=LINE_DIGEST)
    # map() keeps the loop in C: about one BLAKE2s call's cost per line, nothing more.
    return b"".join(map(methodcaller("digest"), map(one, lines)))
