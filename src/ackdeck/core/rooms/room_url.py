"""Room addresses: a path, or `redis://[USER:PASSWORD@]HOST[:PORT][/DB]/NAME` (`rediss://` for TLS).

Pure parsing, no I/O. The password may also come from `ACKDECK_REDIS_PASSWORD`; it is kept out
of every string this module produces (`display`, `repr`, error messages), so a door that prints
a room's address, an error or a status can never leak it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.room_spec import is_url

__all__ = ["DEFAULT_PORT", "PASSWORD_ENV", "SCHEMES", "RedisAddress", "is_url", "parse_redis_url"]

SCHEMES = ("redis", "rediss")
PASSWORD_ENV = "ACKDECK_REDIS_PASSWORD"
DEFAULT_PORT = 6379
_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")
_DB = re.compile(r"[0-9]{1,5}")


@dataclass(frozen=True)
class RedisAddress:
    tls: bool
    host: str
    port: int
    db: int
    name: str
    username: str | None = None
    # compare=False and repr=False: the secret never shows up in a repr, an f-string of the
    # dataclass or an equality-based dict key.
    password: str | None = field(default=None, repr=False, compare=False)

    @property
    def display(self) -> str:
        """The address without its password (the username is not a secret)."""
        scheme = "rediss" if self.tls else "redis"
        user = f"{self.username}@" if self.username else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{user}{host}:{self.port}/{self.db}/{self.name}"

    @property
    def where(self) -> str:
        """host:port, for errors that name the server."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def __str__(self) -> str:
        return self.display


def _bad(spec: str, why: str) -> InvalidInput:
    # Never echo the spec itself: it may hold a password.
    return InvalidInput(f"invalid room URL {_redact(spec)!r}: {why}")


def _redact(spec: str) -> str:
    """The spec with anything between `://` and the last `@` of its authority replaced."""
    scheme, sep, rest = spec.partition("://")
    if not sep:
        return spec[:200]
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        user_pass, _, hostport = authority.rpartition("@")
        user = user_pass.partition(":")[0]
        authority = f"{user}:***@{hostport}" if ":" in user_pass else f"{user}@{hostport}"
    return f"{scheme}://{authority}{slash}{path}"[:200]


def parse_redis_url(spec: str, env: Mapping[str, str] | None = None) -> RedisAddress:
    """Parse a redis room URL; raise InvalidInput (one line, no password) when it is not one."""
    env = os.environ if env is None else env
    if "\0" in spec or any(c.isspace() for c in spec):
        raise _bad(spec, "it contains whitespace or a NUL byte")
    try:
        parts = urlsplit(spec)
        port = parts.port
    except ValueError as exc:
        raise _bad(spec, str(exc).replace(spec, "")) from None
    if parts.scheme not in SCHEMES:
        raise _bad(spec, f"the scheme must be redis:// or rediss://, not {parts.scheme}://")
    if parts.query or parts.fragment:
        raise _bad(spec, "no ?query or #fragment is accepted")
    host = parts.hostname
    if not host:
        raise _bad(spec, "no host; use redis://HOST[:PORT][/DB]/NAME")
    segments = parts.path.split("/")[1:] if parts.path else []
    if len(segments) == 1:
        db_text, name = "0", segments[0]
    elif len(segments) == 2:
        db_text, name = segments
    else:
        raise _bad(spec, "the path must be /NAME or /DB/NAME")
    if not _DB.fullmatch(db_text):
        raise _bad(spec, f"database {db_text[:20]!r} is not a number")
    if not _NAME.fullmatch(name) or set(name) == {"."}:
        raise _bad(spec, "the room NAME must be 1-128 of A-Z a-z 0-9 . _ -")
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    if not password:
        password = env.get(PASSWORD_ENV) or None
    return RedisAddress(
        tls=parts.scheme == "rediss",
        host=host,
        port=DEFAULT_PORT if port is None else port,
        db=int(db_text),
        name=name,
        username=username,
        password=password,
    )
