"""Which fleet this process belongs to, and as which host (docs/how-to/fleet.md).

The fleet's Redis comes from `--fleet URL`, else `$ACKDECK_FLEET`, else `fleet = "URL"` in the
config file (the dashboard's, `$XDG_CONFIG_HOME/ackdeck/config.toml` or
`~/.config/ackdeck/config.toml`); none of them: no fleet, every command works on this host
alone as before. The host id comes the same way (`--host-id`, `$ACKDECK_HOST_ID`, `host_id`),
defaulting to the host name; it is a name as a session's is (letters, digits and `._@-`).

The URL is a room's (`redis://[USER:PASSWORD@]HOST[:PORT][/DB]/NAME`, `rediss://` for TLS, the
password also from `ACKDECK_REDIS_PASSWORD`), its NAME naming the fleet, so that fleets can share
a server; `redis://HOST[:PORT]` alone is database 0, fleet `default`.

Pure but for reading the config file: no redis import here (the CLI resolves settings before it
knows whether it will connect).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ackdeck.core.base.names import check_name
from ackdeck.core.base.struct import Struct
from ackdeck.core.base.timeouts import seconds_from_env
from ackdeck.core.errors import InvalidInput, InvalidName
from ackdeck.core.rooms.room_url import RedisAddress, parse_redis_url

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

FLEET_ENV = "ACKDECK_FLEET"
HOST_ENV = "ACKDECK_HOST_ID"
TTL_ENV = "ACKDECK_FLEET_TTL"
KEEP_ENV = "ACKDECK_FLEET_KEEP"
DEFAULT_FLEET = "default"
# A host that has not published for TTL seconds (server time) is gone. Publishers refresh at a
# third of it, so one lost or late publish never makes a live host look gone.
DEFAULT_TTL = 30.0
# How long a gone host's last rows stay listed (as gone) before its key expires.
DEFAULT_KEEP = 24 * 3600.0


class FleetSettings(Struct):
    address: RedisAddress  # the server; address.name is the fleet's name
    host: str  # this host's id
    ttl: float  # seconds without a publish after which a host is gone
    keep: float  # seconds a gone host's rows stay listed

    @property
    def fleet(self) -> str:
        return self.address.name

    @property
    def url(self) -> str:
        """The address without its password, for every line a door prints."""
        return self.address.display

    @property
    def every(self) -> float:
        """How often a long-lived process publishes."""
        return self.ttl / 3


def parse_fleet_url(spec: str, env: Mapping[str, str] | None = None) -> RedisAddress:
    """A fleet URL; InvalidInput (one line, no password) when it is not one."""
    if not isinstance(spec, str):
        raise InvalidInput("invalid fleet URL: must be a redis:// URL (a string)")
    try:
        parts = urlsplit(spec)
        path = parts.path
    except ValueError:
        path = "?"
    if path in ("", "/"):
        spec = spec.rstrip("/") + f"/0/{DEFAULT_FLEET}"
    try:
        return parse_redis_url(spec, env)
    except InvalidInput as exc:
        text = str(exc).replace("invalid room URL", "invalid fleet URL", 1)
        raise InvalidInput(text.replace("the room NAME", "the fleet NAME")) from None


def host_id(value: str, where: str) -> str:
    try:
        check_name(value, "host id")
    except InvalidName as exc:
        raise InvalidName(f"{where}: {exc}") from None
    if "@" in value:
        # `NAME@HOST` ends at its last `@`: `s@be@ta` is the session `s@be` of host `ta`, so
        # a host id holding one could never be named (host names never hold one).
        raise InvalidName(
            f"{where}: invalid host id {value!r}: no '@' (a session on another host is "
            "named NAME@HOST)"
        )
    return value


def resolve_fleet(
    url: str | None = None,
    host: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    config: Mapping[str, object] | None = None,
) -> FleetSettings | None:
    """The fleet settings from the flags, else the environment, else the config table (a parsed
    config file; None: read the default one); None when no fleet is set anywhere."""
    env = os.environ if env is None else env
    if config is None:
        config = default_config_table(env)
    spec = url or env.get(FLEET_ENV) or config.get("fleet")
    if not spec:
        return None
    address = parse_fleet_url(spec, env)  # type: ignore[arg-type]
    hid = this_host(host, env=env, config=config)
    ttl = seconds_from_env(env, TTL_ENV, DEFAULT_TTL, 1.0, 86400.0)
    keep = max(ttl, seconds_from_env(env, KEEP_ENV, DEFAULT_KEEP, 1.0, 30 * 86400.0))
    return FleetSettings(address, hid, ttl, keep)


def this_host(
    host: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    config: Mapping[str, object] | None = None,
) -> str:
    """This host's id, with or without a fleet: `--host-id`, else the environment's, else the
    config's, else the host name."""
    env = os.environ if env is None else env
    if host:
        return host_id(host, "--host-id")
    if env.get(HOST_ENV):
        return host_id(env[HOST_ENV], HOST_ENV)
    if config is None:
        config = default_config_table(env)
    if config.get("host_id"):
        return host_id(config["host_id"], "config host_id")  # type: ignore[arg-type]
    return host_id(os.uname().nodename, f"the host name (set {HOST_ENV})")


def default_config_table(env: Mapping[str, str]) -> dict[str, object]:
    """The fleet keys of the default config file, if there is one (the dashboard checks the
    rest of it); a file that cannot be read or parsed is one line naming it."""
    from ackdeck.core.base.locations import default_config_path

    path = default_config_path(env)
    return {} if path is None else config_table(path)


def config_table(path: Path) -> dict[str, object]:
    import tomllib

    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInput(f"config {path}: cannot read: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"config {path}: {exc}") from None
    out: dict[str, object] = {}
    for key in ("fleet", "host_id"):
        value = raw.get(key)
        if value is not None and not isinstance(value, str):
            raise InvalidInput(f"config {path}: {key}: must be a string")
        if value:
            out[key] = value
    return out
