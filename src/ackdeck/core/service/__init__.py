"""The service layer: the one place every door (CLI, MCP server, dashboard) calls.

Each operation resolves the home once, validates its input once (names, regexes, timeouts, an
`exclude` that needs a pattern), reconciles dead supervisors only where it is the explicit step
the caller asked for (listings and drains; queries in core never write), and returns the value
rooms and monitors return (a `core.base.struct.Struct`, labelled as the door names it), which
carries every number a door shows and encodes itself to the one JSON shape that CLI `--json`
prints and MCP returns as structured content.
The doors parse their input, call one operation, and print: text for people and models may
differ per door, the JSON never does (tests/test_doors_agree.py runs both and compares).

- `core.service.rooms`: push, read, ack (and ack-all), status, wait (light enough for the
  per-turn hooks).
- `core.service.procs`: start, output, list, kill.
- `core.service.wakes`: list, drain, dismiss.

Imports stay light (no pydantic, mcp or RE2 at module level): `room push` and the hooks run on
every turn of an agent and must start fast.
"""
