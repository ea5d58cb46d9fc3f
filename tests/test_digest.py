"""core/base/digest.py: the builtin SHA-256 for a few small inputs, OpenSSL's once it pays."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers.paths import REPO

CHECK = """
import sys
from ackdeck.core.base import digest
data = [bytes([i]) * 4096 for i in range(4)] + [b"", b"x" * (digest.LARGE + 1)]
small = [digest.sha256_hex(d) for d in data[:-1]]
assert "hashlib" not in sys.modules, "a few small inputs loaded OpenSSL"
digest.use_openssl(digest.MANY - 1)
assert "hashlib" not in sys.modules, "use_openssl below MANY loaded OpenSSL"
digest.use_openssl(digest.MANY)
assert "hashlib" in sys.modules
import hashlib
assert [digest.sha256_hex(d) for d in data[:-1]] == small
assert small == [hashlib.sha256(d).hexdigest() for d in data[:-1]]
assert type(digest.new_sha256(10)) is type(hashlib.sha256())
assert digest.sha256_hex(data[-1]) == hashlib.sha256(data[-1]).hexdigest()
print("ok")
"""


def test_openssl_is_loaded_only_for_many_inputs_and_gives_the_same_digests() -> None:
    # A fresh interpreter: the test process itself has long loaded hashlib.
    out = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "ok\n"
