"""Dashboard configuration: a checked dataclass, loadable from TOML.

```toml
session = "owner"        # the session the dashboard reads and acks as
home = "~/.ackdeck"      # processes and wakes (default: $ACKDECK_HOME or ~/.ackdeck)
rooms = ["inbox.txt"]    # relative paths are relative to the config file; or redis:// URLs
room_dirs = ["inboxes"]  # every file in these directories is a room (new ones appear live)
theme = "nord"           # the palette's theme (written here when the owner picks one)
watch = true             # live updates from watchfiles
tick_seconds = 1.0       # sweeps: runs every 10 ticks, all rooms every 30; 0: off, else 0.05-3600
claude_teams = true      # list Claude Code teams' mailboxes ($CLAUDE_CONFIG_DIR or ~/.claude)
fleet = "redis://fleet.internal/team"  # every host's agents, runs, wakes (docs/how-to/fleet.md)
host_id = "laptop"       # this host's id in the fleet (default the host name)
```

Without `--config` the dashboard reads `$XDG_CONFIG_HOME/ackdeck/config.toml`, else
`~/.config/ackdeck/config.toml`, when one exists (`default_config_path`).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ackdeck.core.base.locations import CONFIG_NAME, config_dirs
from ackdeck.core.base.locations import default_config_path as default_config_path
from ackdeck.core.base.names import check_name
from ackdeck.core.base.ranges import in_range
from ackdeck.core.errors import InvalidInput, InvalidName
from ackdeck.core.service.refs import room_spec

if TYPE_CHECKING:
    from ackdeck.core.service.fleet.settings import FleetSettings


@dataclass
class DashConfig:
    """The dashboard's settings. Built from keywords (checked and normalised here) or from a
    TOML table (`from_table`, which also names what is wrong with a value).

    Not a pydantic model: importing pydantic and building the model cost ~60 ms of the
    dashboard's first paint (issue 22: first paint within 0.59x Toolong's), for eleven
    settings whose checks fit in this class."""

    session: str = "owner"
    home: Path | None = None
    rooms: list[Path | str] = field(default_factory=list)  # str: a redis:// room URL
    room_dirs: list[Path] = field(default_factory=list)  # each file in them is a room
    theme: str | None = None
    watch: bool = True
    tick_seconds: float = 1.0
    # Count rooms in a separate scanner process (keeps the UI responsive on flooded rooms).
    scan_process: bool = True
    # Snapshot tests switch these off: no clock in the header, no animations.
    show_clock: bool = True
    animations: bool = True
    title: str = "ackdeck"
    # Show every Claude Code team's mailboxes (claude-team://TEAM/AGENT, found anew at each
    # sweep). None: the command decides (`ackdeck tui` does, unless --no-claude-teams).
    claude_teams: bool | None = None
    # The fleet (docs/how-to/fleet.md): ACKDECK_FLEET and ACKDECK_HOST_ID win over these.
    fleet: str | None = None
    host_id: str | None = None
    # `--fleet URL` and `--host-id ID` of the dashboard's command: they win over the
    # environment, as they do for every other command (not a key of the config file).
    fleet_flags: tuple[str | None, str | None] = field(
        default=(None, None), metadata={"flags_only": True}
    )

    def __post_init__(self) -> None:
        # Each check raises ValueError("key: what is wrong"); from_table adds the file.
        self.session = _named("session", self.session, _session_name)
        self.home = None if self.home is None else _named("home", self.home, _as_path)
        self.rooms = _list("rooms", self.rooms, _room_spec, "paths or redis:// URLs")
        self.room_dirs = _list("room_dirs", self.room_dirs, _as_path, "paths")
        if self.theme is not None and not isinstance(self.theme, str):
            raise ValueError("theme: must be a string (a theme's name)")
        for name in ("watch", "scan_process", "show_clock", "animations"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}: must be true or false")
        self.tick_seconds = _named("tick_seconds", self.tick_seconds, _tick)
        if not isinstance(self.title, str):
            raise ValueError("title: must be a string")
        if self.claude_teams is not None and not isinstance(self.claude_teams, bool):
            raise ValueError("claude_teams: must be true or false")
        if self.fleet is not None:
            self.fleet = _named("fleet", self.fleet, _fleet_url)
        if self.host_id is not None:
            self.host_id = _named("host_id", self.host_id, _host_id)

    def fleet_settings(self, env: Mapping[str, str] | None = None) -> FleetSettings | None:
        """The fleet the dashboard shows and publishes to: the command's flags', else the
        environment's, else this config's; None without one."""
        from ackdeck.core.service.fleet.settings import resolve_fleet

        table = {k: v for k, v in (("fleet", self.fleet), ("host_id", self.host_id)) if v}
        url, host = self.fleet_flags
        return resolve_fleet(url, host, env=os.environ if env is None else env, config=table)

    @classmethod
    def from_table(cls, table: Mapping[str, object]) -> DashConfig:
        """The settings of a parsed TOML table; an unknown key or a bad value is a ValueError
        naming the key."""
        known = [f.name for f in fields(cls) if not f.metadata.get("flags_only")]
        for key in table:
            if key not in known:
                raise ValueError(f"{key}: not a setting (settings: {', '.join(known)})")
        return cls(**table)  # type: ignore[arg-type]  # __post_init__ checks every value

    def with_overrides(
        self,
        *,
        home: Path | None = None,
        rooms: list[Path | str] | None = None,
        room_dirs: list[Path] | None = None,
        session: str | None = None,
        fleet: str | None = None,
        host_id: str | None = None,
    ) -> DashConfig:
        update: dict[str, Any] = {}
        if fleet is not None or host_id is not None:
            # Checked as the config's own values are (one line naming the flag), then kept
            # apart: the flags win over the environment, the config file does not.
            try:
                flags = (
                    None if fleet is None else _named("--fleet", fleet, _fleet_url),
                    None if host_id is None else _named("--host-id", host_id, _host_id),
                )
            except ValueError as exc:
                raise InvalidInput(str(exc)) from None
            update["fleet_flags"] = flags
        if home is not None:
            update["home"] = home
        if rooms:
            update["rooms"] = [*self.rooms, *rooms]
        if room_dirs:
            update["room_dirs"] = [*self.room_dirs, *room_dirs]
        if session is not None:
            check_name(session)
            update["session"] = session
        return replace(self, **update)

    def room_paths(self) -> list[Path | str]:
        """Absolute, de-duplicated, in the order given (then each room directory's files, by
        name); redis room URLs as given. Lists the directories: call it again to see files
        that appeared or went."""
        seen: dict[str, Path | str] = {}
        teams: list[Path | str] = []
        if self.claude_teams:
            from ackdeck.core.service.claude_teams import mailbox_specs

            teams = [*mailbox_specs()]
        for p in [*self.rooms, *rooms_in(self.dir_paths()), *teams]:
            if isinstance(p, str):
                seen.setdefault(p, p)
                continue
            ap = p.expanduser().absolute()
            seen.setdefault(str(ap), ap)
        return list(seen.values())

    def dir_paths(self) -> list[Path]:
        return [d.expanduser().absolute() for d in self.room_dirs]


def _named(key: str, value: object, check: Callable[[object], Any]) -> Any:
    try:
        return check(value)
    except ValueError as exc:
        raise ValueError(f"{key}: {exc}") from None


# A tick shorter than this repaints and sweeps faster than anyone reads (1e-7 was a busy loop
# that never painted); longer than an hour, the sweeps it drives never seem to happen.
TICK_RANGE = (0.05, 3600.0)


def _tick(value: object) -> float:
    if value == 0 and not isinstance(value, bool):
        return 0.0  # off
    try:
        return in_range(value, "", *TICK_RANGE)
    except InvalidInput:
        low, high = TICK_RANGE
        raise ValueError(
            f"must be a number of seconds, 0 (off) or from {low:g} to {high:g}, "
            f"got {str(value)[:40]!r}"
        ) from None


def _session_name(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string (a session name)")
    try:
        return check_name(value)
    except InvalidName as exc:
        raise ValueError(str(exc)) from None


def _fleet_url(value: object) -> str:
    from ackdeck.core.service.fleet.settings import parse_fleet_url

    if not isinstance(value, str):
        raise ValueError("must be a redis:// URL (a string)")
    try:
        parse_fleet_url(value, {})
    except InvalidInput as exc:
        raise ValueError(str(exc)) from None
    return value


def _host_id(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string (a host id)")
    try:
        return check_name(value, "host id")
    except InvalidName as exc:
        raise ValueError(str(exc)) from None


def _as_path(value: object) -> Path:
    if not isinstance(value, str | os.PathLike):
        raise ValueError("must be a path (a string)")
    return Path(value)


def _room_spec(value: object) -> Path | str:
    # A URL stays a string (a Path would fold its `//`); anything else is a path.
    if not isinstance(value, str | os.PathLike):
        raise ValueError("must be a path or a redis:// URL (a string)")
    try:
        return room_spec(value, check=True)
    except InvalidInput as exc:
        raise ValueError(str(exc)) from None


def _list(key: str, value: object, item: Callable[[object], Any], what: str) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise ValueError(f"{key}: must be a list of {what}")
    return [_named(f"{key}.{i}", v, item) for i, v in enumerate(value)]


def rooms_in(dirs: list[Path]) -> list[Path]:
    """The rooms of room directories: regular files (a symlink is not followed, as core does
    not), not hidden (sidecars, temporary files of acks), sorted by name. A directory that is
    missing or unreadable has none (yet)."""
    out: list[Path] = []
    for d in dirs:
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        names = sorted(
            e.name
            for e in entries
            if not e.name.startswith(".") and e.is_file(follow_symlinks=False)
        )
        out += [d / n for n in names]
    return out


def settings_path(env: Mapping[str, str]) -> Path:
    """Where a setting the owner changes is written when no config file was read."""
    return config_dirs(env)[0] / CONFIG_NAME


def with_theme(text: str, theme: str) -> str:
    """The TOML `text` with its top-level `theme` set to `theme`, every other line kept as
    written (comments too). Pure, so it is tested on its own."""
    line = f"theme = {json.dumps(theme)}"  # a JSON string is a TOML basic string
    lines = text.splitlines()
    for i, old in enumerate(lines):
        stripped = old.strip()
        if stripped.startswith("["):
            lines.insert(i, line)  # top-level keys come before the first table
            break
        key = stripped.split("=", 1)[0].strip()
        if "=" in stripped and key in ("theme", '"theme"', "'theme'"):
            lines[i] = line
            break
    else:
        lines.append(line)
    return "\n".join(lines) + "\n"


def remember_theme(path: Path, theme: str) -> None:
    """Write `theme` into the config at `path` (created if missing), atomically; a config
    this would not parse back is left untouched (InvalidInput)."""
    from ackdeck.core.base.atomic import atomic_write

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"config {path}: cannot read: {exc}") from None
    new = with_theme(text, theme)
    try:
        parsed = tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"config {path}: not changed, it would not parse: {exc}") from None
    if parsed.get("theme") != theme:
        raise InvalidInput(f"config {path}: not changed, its theme entry is not a plain line")
    # A config that is a symlink (a dotfiles checkout) is written where it points, in its mode.
    target = path.resolve()
    try:
        mode = target.stat().st_mode & 0o777
    except OSError:
        mode = 0o644
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, new.encode("utf-8"), mode=mode)
    except OSError as exc:
        raise InvalidInput(f"config {path}: cannot write: {exc.strerror}") from None


def load_config(path: str | Path) -> DashConfig:
    """Parse a TOML config; any problem is one clear line (InvalidInput)."""
    p = Path(path)
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(f"config {p}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"config {p}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"config {p}: invalid TOML: {exc}") from None
    try:
        cfg = DashConfig.from_table(raw)
    except ValueError as exc:
        raise InvalidInput(f"config {p}: {exc}") from None
    base = p.parent.absolute()
    rooms = [
        r if isinstance(r, str) or r.expanduser().is_absolute() else base / r for r in cfg.rooms
    ]
    home = cfg.home
    if home is not None and not home.expanduser().is_absolute():
        home = base / home
    dirs = [d if d.expanduser().is_absolute() else base / d for d in cfg.room_dirs]
    return replace(cfg, rooms=rooms, home=home, room_dirs=dirs)
