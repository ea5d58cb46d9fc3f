"""The limits ackdeck sizes its reads by: what each agent client shows its model (issue 29).

A read is consumed only if the model saw it whole, so ackdeck keeps a read under the size at
which each client persists or cuts a tool result (docs/reference/agent-clients.md). These
tests pin those sizes on the client versions `make npm-cache` installs, with a probe MCP server
whose results have an exact size (tests/helpers/probe_server.py) and the scripted model stand-in:
a client upgrade that moves a limit fails here, not in an agent's inbox. They also pin which
part of a result the model gets (structuredContent or text), which decides where ackdeck must
put what the agent needs to know, and the name each client gives the server (logged from the
client's side of the stdio pipe), which is how a server knows which limit applies.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import agent_clients as clients
from tests.helpers.model_stub import Call, ModelStub, Say, Search
from tests.helpers.paths import PATHS
from tests.helpers.probe_server import JSON_SIDE, TEXT_SIDE, payload

# (whole, cut): the largest probe text a client shows whole and a size it cuts or persists.
# Claude Code compares characters with 50,000; Codex the UTF-8 bytes of "Wall time: …\nOutput:"
# plus the text with 48,000 (gpt-5.5) or 12,000 (other models); Gemini CLI the characters of
# the text wrapped in <untrusted_context> with 40,000. The exact edges are in
# docs/reference/agent-clients.md; Codex's and Gemini's have a margin for their wrappers.
LIMITS = {
    "claude": (50_000, 50_001),
    "codex": (47_900, 48_000),
    "codex-other-model": (11_900, 12_000),  # gpt-5.4, and any name Codex does not know
    "gemini": (39_900, 40_000),
}
OTHER_MODEL = "stub-model"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
NAMES = {"claude": "claude-code", "codex": "codex-mcp-client", "gemini": "gemini-cli-mcp-client"}
CUT_MARK = {
    "claude": "<persisted-output>",
    "codex": "tokens truncated",
    "gemini": "Output too large. Showing first 8,000 and last 32,000 characters.",
}


@dataclass
class ProbeSetup(clients.Setup):
    """A client set up as for ackdeck, with the probe server in ackdeck's place (so its tools
    are named as ackdeck's would be: mcp__ackdeck__blob, mcp_ackdeck_blob)."""

    @property
    def heard(self) -> Path:  # every line the client sent the server
        return self.root / "client-said.jsonl"

    def server(self) -> dict[str, object]:
        probe = [sys.executable, "-m", "tests.helpers.probe_server"]
        return {
            "command": sys.executable,
            "args": ["-m", "tests.helpers.stdio_tee", str(self.heard), *probe],
            "env": {"PYTHONPATH": PATHS},
        }

    def client_names(self) -> set[str]:
        """The client's name as it introduced itself: in `initialize`, or (Claude Code 2.1,
        protocol 2026-07-28, which sends no initialize) in every request's `_meta`."""
        names = set()
        for line in self.heard.read_text().splitlines():
            params = json.loads(line).get("params") or {}
            meta = params.get("_meta") or {}
            for info in (params.get("clientInfo"), meta.get(CLIENT_INFO)):
                if info:
                    names.add(info["name"])
        return names


def probe_call(client: str, tool: str, **args: object) -> Call:
    if client == "claude":
        return Call(f"mcp__ackdeck__{tool}", dict(args))
    if client == "codex":
        return Call(tool, dict(args), namespace="mcp__ackdeck")
    return Call(f"mcp_ackdeck_{tool}", dict(args))


@pytest.mark.parametrize("case", list(LIMITS))
def test_the_largest_result_each_client_shows_its_model_whole(case: str, tmp_path: Path) -> None:
    client = case.split("-")[0]
    clients.need_client(client)
    whole, cut = LIMITS[case]
    s = ProbeSetup(tmp_path).make()
    calls = [probe_call(client, "blob", n=whole), probe_call(client, "blob", n=cut)]
    mixed = probe_call(client, "both")
    first = {
        "claude": [Call("ToolSearch", {"query": "select:mcp__ackdeck__blob,mcp__ackdeck__both"})],
        "codex": [Search("probe blob both", limit=5)],
        "gemini": [],
    }[client]
    with ModelStub([*first, *calls, mixed, Say("done")]) as stub:
        if client == "claude":
            run = clients.claude(s, stub.url, "probe", hooks=False)
        elif case == "codex":
            run = clients.codex(s, stub.url, "probe")
        elif client == "codex":
            run = clients.codex(s, stub.url, "probe", model=OTHER_MODEL)
        else:
            run = clients.gemini(s, stub.url, "probe")
        assert run.returncode == 0, run.stderr[-2000:]
        shown, cut_view, mixed_view = (stub.result_of(c) for c in (*calls, mixed))
    assert payload(whole) in shown and CUT_MARK[client] not in shown, shown[:300]
    assert payload(cut) not in cut_view and CUT_MARK[client] in cut_view, cut_view[:300]
    assert s.client_names() == {NAMES[client]}  # what a server can size its reads by
    if client == "gemini":  # the text only; structured content never reaches the model
        assert TEXT_SIDE in mixed_view and JSON_SIDE not in mixed_view, mixed_view
    else:  # the structured content only, as compact JSON; the text is not shown
        assert JSON_SIDE in mixed_view and TEXT_SIDE not in mixed_view, mixed_view
