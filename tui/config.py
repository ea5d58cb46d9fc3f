"""Dashboard configuration: a pydantic model, loadable from TOML.

```toml
session = "owner"        # the session the dashboard reads and acks as
home = "~/.ackdeck"      # processes and wakes (default: $ACKDECK_HOME or ~/.ackdeck)
rooms = ["inbox.txt"]    # relative paths are relative to the config file; or redis:// URLs
watch = true             # live updates from watchfiles
tick_seconds = 1.0       # periodic rescan (ages, missed events); 0 disables
```
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ackdeck.core.base.names import check_name
from ackdeck.core.errors import InvalidInput, InvalidName
from ackdeck.core.inbox.room_url import is_url, parse_redis_url


class DashConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session: str = "owner"
    home: Path | None = None
    rooms: list[Path | str] = Field(default_factory=list)  # str: a redis:// room URL
    watch: bool = True
    tick_seconds: float = Field(default=1.0, ge=0)
    # Count rooms in a separate scanner process (keeps the UI responsive on flooded rooms).
    scan_process: bool = True
    # Snapshot tests switch these off: no clock in the header, no animations.
    show_clock: bool = True
    animations: bool = True
    title: str = "ackdeck"

    @field_validator("rooms", mode="before")
    @classmethod
    def _room_specs(cls, v: object) -> object:
        # A URL stays a string (a Path would fold its `//`); anything else is a path.
        if not isinstance(v, list):
            return v
        out: list[object] = []
        for r in v:
            if is_url(r):
                try:
                    parse_redis_url(str(r), {})
                except InvalidInput as exc:
                    raise ValueError(str(exc)) from None
                out.append(str(r))
            else:
                out.append(Path(r) if isinstance(r, str) else r)
        return out

    @field_validator("session")
    @classmethod
    def _session_name(cls, v: str) -> str:
        try:
            return check_name(v)
        except InvalidName as exc:  # pydantic reports ValueError as a validation error
            raise ValueError(str(exc)) from None

    def with_overrides(
        self,
        *,
        home: Path | None = None,
        rooms: list[Path | str] | None = None,
        session: str | None = None,
    ) -> DashConfig:
        update: dict[str, object] = {}
        if home is not None:
            update["home"] = home
        if rooms:
            update["rooms"] = [*self.rooms, *rooms]
        if session is not None:
            check_name(session)
            update["session"] = session
        return self.model_copy(update=update)

    def room_paths(self) -> list[Path | str]:
        """Absolute, de-duplicated, in the order given; redis room URLs as given."""
        seen: dict[str, Path | str] = {}
        for p in self.rooms:
            if isinstance(p, str):
                seen.setdefault(p, p)
                continue
            ap = p.expanduser().absolute()
            seen.setdefault(str(ap), ap)
        return list(seen.values())


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
        cfg = DashConfig.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "(top level)"
        raise InvalidInput(f"config {p}: {where}: {err['msg']}") from None
    base = p.parent.absolute()
    rooms = [
        r if isinstance(r, str) or r.expanduser().is_absolute() else base / r for r in cfg.rooms
    ]
    home = cfg.home
    if home is not None and not home.expanduser().is_absolute():
        home = base / home
    return cfg.model_copy(update={"rooms": rooms, "home": home})
