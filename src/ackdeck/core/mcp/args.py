"""What every MCP tool accepts: input schemas a generic client can fill in, and one-line errors
for arguments the tool cannot take.

The SDK derives each tool's inputSchema from the Python signature. Two things it derives are hard
on clients that build a form or convert command-line values from the schema (the MCP Inspector,
Gemini CLI): an optional value is `anyOf [T, null]` (the Inspector then sends `500` as the string
"500", which a strict argument rightly rejects), and the schema's title is the Python function's
name (`process_list_toolArguments`). `plain_input_schema` (pure) rewrites both and declares
`additionalProperties: false`, which the server enforces (`unknown_arguments`): a misspelt
argument (`al: true` for `all`) is an error, never a call that does something else than asked.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from ackdeck.core.mcp.reply import Reply, error_reply


def plain_input_schema(tool: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with plain types for optional values, a readable title and no extra arguments.

    An optional value whose default is None becomes its one non-null type and loses the null
    default: it is simply not required (omitting it means "not given"). Defaults that are real
    values (`false`, `0.0`) stay, so a form shows them."""
    out = copy.deepcopy(dict(schema))
    out["title"] = f"{tool} arguments"
    out["additionalProperties"] = False
    props = out.get("properties") or {}
    for name, prop in list(props.items()):
        props[name] = _plain(prop)
    return out


def _plain(prop: dict[str, Any]) -> dict[str, Any]:
    variants = prop.get("anyOf")
    if not isinstance(variants, list) or prop.get("default") is not None:
        return prop  # not optional-or-null, or a real default a form should show
    kept = [v for v in variants if v != {"type": "null"}]
    if len(kept) != 1 or len(kept) == len(variants):
        return prop  # a real union (or no null in it): leave it as the SDK wrote it
    rest = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
    return {**kept[0], **rest}


def accepted_arguments(schema: Mapping[str, Any]) -> list[str]:
    return list((schema.get("properties") or {}).keys())


def unknown_arguments(tool: str, given: Iterable[str], accepted: list[str]) -> Reply | None:
    """An error naming every argument `tool` does not take and the ones it does; None if all
    are known."""
    unknown = sorted(set(given) - set(accepted))
    if not unknown:
        return None
    takes = ", ".join(accepted) if accepted else "no arguments"
    what = "argument" if len(unknown) == 1 else "arguments"
    return error_reply(
        "invalid_arguments",
        f"unknown {what} for {tool}: {', '.join(repr(u[:100]) for u in unknown)}; "
        f"{tool} takes {takes}",
        problems=[{"argument": u[:100], "problem": "unknown argument"} for u in unknown],
    )


def invalid_arguments(tool: str, exc: ValidationError) -> Reply:
    """One line for the model and a list of {argument, problem} for programs. The rejected
    values are not echoed: they are the caller's data and may be long."""
    problems = [
        {"argument": ".".join(str(p) for p in err["loc"]) or "(arguments)", "problem": err["msg"]}
        for err in exc.errors(include_url=False)
    ]
    text = f"invalid arguments for {tool}: " + "; ".join(
        f"{p['argument']}: {p['problem']}" for p in problems
    )
    return error_reply("invalid_arguments", text, problems=problems)
