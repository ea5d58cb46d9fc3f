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
import os
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


# ----- `make test-clients-newest`: the largest read each client shows whole, measured ---------
# The file each case appends its measurement to (one JSON a line).
REPORT_ENV = "ACKDECK_CLIENT_REPORT"
# Sizes probed in one run, as fractions of the pinned first cut: the pinned edge itself, and
# enough on either side to say where a release moved it (to within the grid).
GRID = (0.5, 0.9, 1.1, 1.5, 2.0, 4.0)


def client_version(client: str) -> str:
    """The version of the client package the tests run (`clients.NPM_DIR`)."""
    manifest = clients.NPM_DIR / "node_modules" / clients.CLIENTS[client] / "package.json"
    return str(json.loads(manifest.read_text())["version"])


@pytest.mark.parametrize("case", list(LIMITS))
def test_the_largest_read_each_client_shows_whole_is_measured_for_the_docs(
    case: str, tmp_path: Path
) -> None:
    """Not a pin (the test above is): one run per client probing sizes around the pinned
    edge, whose result `bench/client_table.py` writes into docs/reference/agent-clients.md."""
    report = os.environ.get(REPORT_ENV)
    if not report:
        pytest.skip(f"set {REPORT_ENV}=FILE to measure (make test-clients-newest does)")
    client = case.split("-")[0]
    clients.need_client(client)
    whole, cut = LIMITS[case]
    sizes = sorted({whole, cut, *(int(cut * f) for f in GRID)})
    calls = [probe_call(client, "blob", n=n) for n in sizes]
    first = {
        "claude": [Call("ToolSearch", {"query": "select:mcp__ackdeck__blob"})],
        "codex": [Search("probe blob", limit=5)],
        "gemini": [],
    }[client]
    with ModelStub([*first, *calls, Say("done")]) as stub:
        if client == "claude":
            run = clients.claude(ProbeSetup(tmp_path).make(), stub.url, "probe", hooks=False)
        elif case == "codex":
            run = clients.codex(ProbeSetup(tmp_path).make(), stub.url, "probe")
        elif client == "codex":
            run = clients.codex(ProbeSetup(tmp_path).make(), stub.url, "probe", model=OTHER_MODEL)
        else:
            run = clients.gemini(ProbeSetup(tmp_path).make(), stub.url, "probe")
        assert run.returncode == 0, run.stderr[-2000:]
        views = [stub.result_of(c) for c in calls]
    shown = [n for n, v in zip(sizes, views, strict=True) if payload(n) in v]
    not_shown = [n for n in sizes if n not in shown]
    row = {
        "case": case,
        "client": client,
        "package": clients.CLIENTS[client],
        "version": client_version(client),
        "whole": max(shown, default=None),  # the largest probe shown whole
        "cut": min(not_shown, default=None),  # the smallest probe not shown whole
        "pinned": [whole, cut],
    }
    with open(report, "a") as f:
        f.write(json.dumps(row) + "\n")
    assert shown == sizes[: len(shown)], (shown, sizes)  # whole below the edge, cut above


def test_the_docs_client_table_is_written_from_the_measurement_and_bad_reports_say_one_line(
    tmp_path: Path,
) -> None:
    import subprocess

    from tests.helpers.paths import REPO

    doc = tmp_path / "agent-clients.md"
    original = (REPO / "docs" / "reference" / "agent-clients.md").read_text()
    doc.write_text(original)
    report = tmp_path / "report.jsonl"
    row = {"case": "claude", "client": "claude", "package": "@anthropic-ai/claude-code"}
    moved = row | {"version": "9.9.9", "whole": 60_000, "cut": 100_002, "pinned": [50_000, 50_001]}
    report.write_text(json.dumps(moved) + "\n")

    def table(*args: Path) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "bench.client_table", *map(str, args)]
        return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)

    done = table(report, doc)
    assert done.returncode == 0, done.stderr
    line = "| Claude Code | 9.9.9 | 60,000 characters | 100,002 characters | no: update the pins |"
    assert line in done.stdout
    # Only the text between the markers changed: the measured table, replaced whole.
    before, after = (
        original.split("<!-- BEGIN client table"),
        doc.read_text().split("<!-- BEGIN client table"),
    )
    assert after[0] == before[0] and after[1].split("-->", 1)[1].strip().startswith(
        "| client | version"
    )
    generated = after[1].split("<!-- END client table -->")[0]
    assert line in generated and generated.count("| Claude Code |") == 1, generated
    assert (
        after[1].split("<!-- END client table -->")[1]
        == before[1].split("<!-- END client table -->")[1]
    )
    for bad, why in (("{", "line 1 is not JSON"), ("", "has no measurement")):
        report.write_text(bad)
        done = table(report, doc)
        assert done.returncode == 1 and why in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
