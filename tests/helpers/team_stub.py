"""The scripted model of a Claude Code team: one script per agent. Claude Code sends every
agent's requests to one API; a teammate's carry the header `x-claude-code-agent-id:
NAME@TEAM` (shared/AGENT-LOOPS.md), the lead's carry none, so each request plays the next step
of its own agent's script. Built on tests/helpers/model_stub.py (its serving and formats);
nothing there changes."""

from __future__ import annotations

import threading
from typing import Any

from tests.helpers.model_stub import ModelStub, Request, Say, Step

LEAD = "team-lead"
AGENT_HEADER = "x-claude-code-agent-id"


class TeamStub(ModelStub):
    def __init__(self, scripts: dict[str, list[Step]]) -> None:
        """`scripts`: agent name (LEAD for the lead) -> its steps; an agent past its script,
        or one not named, answers "done"."""
        super().__init__([])
        self.scripts = {name: list(steps) for name, steps in scripts.items()}
        self.played: dict[str, int] = {}
        self.agent_of: list[str] = []  # per request in self.requests: whose it was
        self._who = threading.local()

    def _serve(self, h: Any, path: str, body: dict[str, Any]) -> None:
        header = h.headers.get(AGENT_HEADER) or ""
        self._who.name = header.split("@", 1)[0] if header else LEAD
        super()._serve(h, path, body)

    def _record(self, api: str, path: str, body: dict[str, Any], turn: bool) -> None:
        with self._lock:
            self.requests.append(Request(api, path, body, turn))
            self.agent_of.append(getattr(self._who, "name", LEAD))

    def _next(self, turn: bool) -> Step:
        if not turn:
            return Say("ok")
        name = getattr(self._who, "name", LEAD)
        with self._lock:
            i = self.played.get(name, 0)
            self.played[name] = i + 1
        script = self.scripts.get(name, [])
        step = script[i] if i < len(script) else Say("done")
        if hasattr(step, "id") and not isinstance(step, Say):
            step.id = f"{name}_{i}"
        if step.before is not None:
            try:
                step.before()
            except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
                self.errors.append(f"{name} step {i}: {e!r}")
        return step

    def turns_of(self, name: str) -> list[dict[str, Any]]:
        """The model turns `name` sent, oldest first (each body is what its model received)."""
        with self._lock:
            pairs = list(zip(self.requests, self.agent_of, strict=True))
        return [r.body for r, who in pairs if r.turn and who == name]
