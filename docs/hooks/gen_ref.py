"""MkDocs hook: the reference pages that must never drift from the code, generated at build time.

- `reference/cli.md` from the argparse parsers `ackdeck.core.cli._parsers.build_parser()`
  builds (every command, the dashboard's entry-point commands included).
- `reference/mcp-tools.md` from what the MCP server publishes: `ackdeck mcp` is started on a
  scratch home and room and asked for `tools/list` through the official SDK client, so names,
  descriptions, arguments, annotations and `outputSchema` are the ones an agent's client sees.
- `reference/json.md` from those same `outputSchema`s (the CLI's `--json` prints the same
  shapes), plus the real output of each `--json` command, run on a scratch home while the site
  builds, each matched to the tool whose schema has exactly its keys; and the error kinds
  from `ackdeck.core.errors`.
- the list of files in `reference/configuration.md` (where FILES_MARK stands) from
  `ackdeck.core.base.locations`, the one module that names every file ackdeck keeps.
- `changelog.md` is the repository's CHANGELOG.md; `screenshots/` is the repository's
  screenshots folder, so the docs show the pictures `make screenshots` draws.

Nothing here is copied by hand: a change in the code shows up in the next build by itself.
tests/test_readme.py imports GENERATED_PAGES and MOUNTS to check links into these pages.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GENERATED_PAGES = (
    "reference/cli.md",
    "reference/mcp-tools.md",
    "reference/json.md",
    "changelog.md",
)
# Folders of the repository shown under the docs site at the same name.
MOUNTS = {"screenshots": ROOT / "screenshots"}
# Help and defaults must not depend on the environment of whoever builds the docs.
CLEAN_ENV = {"COLUMNS": "100"}


@contextlib.contextmanager
def _clean_environment() -> Iterator[None]:
    saved = dict(os.environ)
    try:
        for key in [k for k in os.environ if k.startswith("ACKDECK_")]:
            del os.environ[key]
        os.environ.update(CLEAN_ENV)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _scratch_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACKDECK_")}
    env.update(CLEAN_ENV, ACKDECK_HOME=str(home), PYTHONPATH=str(ROOT))
    return env


# ----- the CLI -------------------------------------------------------------------------------
def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: dict[int, str] = {}
            for name, child in action.choices.items():
                seen.setdefault(id(child), name)  # aliases point at the same parser
            helps = {a.dest: a.help for a in action._choices_actions}
            return [
                (name, child)
                for name, child in action.choices.items()
                if seen[id(child)] == name and helps.get(name) != argparse.SUPPRESS
            ]
    return []


def _summary(parent: argparse.ArgumentParser, name: str) -> str:
    for action in parent._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name:
                    return choice.help or ""
    return ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _arguments_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            names = ", ".join(f"`{o}`" for o in action.option_strings)
            if action.nargs != 0:
                metavar = action.metavar or action.dest.upper()
                names += f" `{metavar}`"
        else:
            names = f"`{action.metavar or action.dest}`"
        default = ""
        if (
            action.default not in (None, False, argparse.SUPPRESS, [])
            and action.nargs != 0
            and action.option_strings
        ):
            default = f"`{action.default}`"
        rows.append(f"| {names} | {_cell(action.help or '')} | {default} |")
    if not rows:
        return []
    return ["| argument | meaning | default |", "| --- | --- | --- |", *rows, ""]


def _command_section(
    path: list[str], parser: argparse.ArgumentParser, summary: str, out: list[str]
) -> None:
    children = _subcommands(parser)
    level = "#" * min(len(path) + 1, 4)
    out.append(f"{level} `{' '.join(path)}`\n")
    if summary:
        out.append(summary[0].upper() + summary[1:] + ".\n" if summary[-1] != "." else summary)
        out.append("")
    out += ["```text", parser.format_usage().strip().removeprefix("usage: "), "```", ""]
    if parser.description and parser.description != summary:
        out += [parser.description, ""]
    out += _arguments_table(parser)
    for name, child in children:
        _command_section([*path, name], child, _summary(parser, name), out)


def cli_page() -> str:
    from ackdeck.core.cli._parsers import build_parser

    with _clean_environment():
        parser = build_parser()
        out = [
            "# CLI reference",
            "",
            "Generated from the argparse parsers of `ackdeck` when this site was built "
            "(`ackdeck.core.cli._parsers.build_parser()`), so it lists exactly the commands and "
            "options of this version. `ackdeck COMMAND --help` prints the same. Exit codes: "
            "[exit codes](exit-codes.md); `--json` shapes: [JSON reference](json.md).",
            "",
        ]
        _command_section(["ackdeck"], parser, "", out)
    return "\n".join(out) + "\n"


# ----- the MCP tools -------------------------------------------------------------------------
def list_tools() -> list[dict[str, Any]]:
    """`tools/list` of a real `ackdeck mcp`, as its clients see it."""
    from mcp import Client, StdioServerParameters

    with tempfile.TemporaryDirectory(prefix="ackdeck-docs-") as tmp:
        base = Path(tmp)
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "ackdeck.core.cli", "mcp", "--session", "agent", "--no-channel"]
            + ["--room", str(base / "inbox.txt")],
            env=_scratch_env(base / "home"),
            cwd=str(base),
        )

        async def ask() -> list[dict[str, Any]]:
            async with Client(params, read_timeout_seconds=120) as client:
                listed = await client.list_tools()
            return [t.model_dump(by_alias=True, exclude_none=True) for t in listed.tools]

        tools = asyncio.run(ask())
    text = json.dumps(tools)
    # The scratch room's path appears in argument descriptions: show the name a user gives.
    return json.loads(text.replace(str(base / "inbox.txt"), "inbox.txt"))


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref:
        target: Any = root
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        return _resolve(target, root)
    return schema


def _type(schema: dict[str, Any], root: dict[str, Any]) -> str:
    schema = _resolve(schema, root)
    if "anyOf" in schema:
        return " or ".join(_type(s, root) for s in schema["anyOf"])
    kind = schema.get("type")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}), root)}"
    if kind == "object" and "properties" in schema:
        return f"object `{schema.get('title', '')}`".replace(" ``", "")
    if kind == "object":
        extra = schema.get("additionalProperties")
        return f"object of {_type(extra, root)}" if isinstance(extra, dict) else "object"
    return {
        "null": "null",
        "integer": "integer",
        "string": "string",
        "boolean": "boolean",
        "number": "number",
    }.get(kind or "", kind or "any")


def _objects(schema: dict[str, Any], root: dict[str, Any], seen: list[str]) -> list[dict]:
    """The object schemas reachable from `schema` (itself first), each once."""
    found = []
    schema = _resolve(schema, root)
    title = schema.get("title", "")
    if schema.get("type") == "object" and "properties" in schema and title not in seen:
        seen.append(title)
        found.append(schema)
    for sub in [*schema.get("properties", {}).values(), *schema.get("anyOf", [])]:
        sub = _resolve(sub, root)
        if "items" in sub:
            sub = sub["items"]
        found += _objects(sub, root, seen)
        for alt in _resolve(sub, root).get("anyOf", []):
            found += _objects(alt, root, seen)
    return found


def _shape_tables(schema: dict[str, Any], level: str) -> list[str]:
    out: list[str] = []
    for obj in _objects(schema, schema, []):
        required = set(obj.get("required", []))
        out += [f"{level} `{obj.get('title', 'result')}`", "", "| key | type |", "| --- | --- |"]
        for key, prop in obj["properties"].items():
            optional = "" if key in required else " (optional)"
            out.append(f"| `{key}` | {_cell(_type(prop, schema))}{optional} |")
        out.append("")
    return out


HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def mcp_page(tools: list[dict[str, Any]]) -> str:
    out = [
        "# MCP tools",
        "",
        "Generated when this site was built by starting `ackdeck mcp --session agent --room "
        "inbox.txt` and asking it for `tools/list` through the official MCP SDK client: "
        "these are the names, arguments, annotations and output schemas an agent's client "
        "sees. A result's structured content follows the tool's output schema (the keys "
        "of each result object are in the [JSON reference](json.md)); an error is a result "
        "with `isError` set and one line of text saying what went wrong, and its kind is "
        "listed under [errors](json.md#errors).",
        "",
        "| tool | what it does |",
        "| --- | --- |",
    ]
    for tool in tools:
        first = (tool.get("description") or "").split(". ")[0].rstrip(".")
        out.append(f"| [`{tool['name']}`](#{tool['name'].replace('_', '_')}) | {_cell(first)} |")
    out.append("")
    for tool in tools:
        out += [f"## `{tool['name']}`", ""]
        if tool.get("title"):
            out += [f"*{tool['title']}*", ""]
        out += [tool.get("description", ""), ""]
        notes = tool.get("annotations", {})
        hints = [h for h in HINTS if notes.get(h)]
        if hints:
            out += ["Annotations: " + ", ".join(f"`{h}`" for h in hints) + ".", ""]
        schema = tool.get("inputSchema", {})
        props = schema.get("properties", {})
        if props:
            required = set(schema.get("required", []))
            out += [
                "| argument | type | required | default | meaning |",
                "| --- | --- | --- | --- | --- |",
            ]
            for name, prop in props.items():
                default = f"`{json.dumps(prop['default'])}`" if "default" in prop else ""
                out.append(
                    f"| `{name}` | {_cell(_type(prop, schema))} | "
                    f"{'yes' if name in required else 'no'} | {default} | "
                    f"{_cell(prop.get('description', ''))} |"
                )
            out.append("")
        else:
            out += ["No arguments.", ""]
        output = tool.get("outputSchema")
        if output:
            out += [
                f"Returns `{output.get('title', 'a result')}`: see "
                f"[its keys](json.md#{_anchor(output.get('title', ''))}).",
                "",
            ]
    return "\n".join(out) + "\n"


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9_-]", "", title.lower())


# ----- JSON shapes ---------------------------------------------------------------------------
def _cli(home: Path, cwd: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "ackdeck.core.cli", *args],
        cwd=cwd,
        env=_scratch_env(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout


EXAMPLES: list[tuple[str, ...]] = [
    ("room", "push", "inbox.txt", "deploy finished", "--json"),
    ("room", "push", "inbox.txt", "p99 back to 41 ms", "--json"),
    ("room", "read", "inbox.txt", "--session", "agent", "--json"),
    ("room", "push", "inbox.txt", "owner: roll back cart-7", "--json"),
    ("room", "ack", "inbox.txt", "--session", "agent", "--json"),
    ("room", "ack", "inbox.txt", "--session", "agent", "--json"),
    ("room", "status", "inbox.txt", "--session", "agent", "--json"),
    ("room", "ack", "inbox.txt", "--session", "agent", "--all", "--json"),
    (
        "run",
        "build",
        "--session",
        "agent",
        "--monitor",
        "ERROR",
        "--json",
        "--",
        "sh",
        "-c",
        "echo ERROR: disk full; printf done",
    ),
    ("output", "build", "--session", "agent", "--filter", "done", "--timeout", "60", "--json"),
    ("ps", "--session", "agent", "--json"),
    ("wakes", "list", "--session", "agent", "--json"),
    ("wakes", "drain", "--session", "agent", "--json"),
    ("kill", "build", "--json"),
    ("wakes", "dismiss", "build", "--session", "agent", "--json"),
    ("room", "read", "inbox.txt/", "--session", "agent", "--json"),
]


def _placeholders(text: str, base: Path) -> str:
    text = text.replace(str(base / "work"), "/home/me/inbox").replace(str(base), "/tmp")
    text = re.sub(r"\b\d{8}T\d{9}-[0-9a-f]{6}\b", "20270115T080000000-a1b2c3", text)
    text = re.sub(r'"(pid|leftovers_pid)": \d+', r'"\1": 4242', text)
    return re.sub(r'("\w*_at"|"at"): [0-9.]+', r"\1: 1800000000.0", text)


def json_examples() -> list[tuple[str, int, Any]]:
    with tempfile.TemporaryDirectory(prefix="ackdeck-docs-") as tmp:
        base = Path(tmp)
        work = base / "work"
        work.mkdir()
        got = []
        for args in EXAMPLES:
            code, out = _cli(base / "home", work, *args)
            shown = _placeholders(out, base)
            docs = [_parsed(doc) for doc in shown.splitlines() if doc.strip()]
            got.append(("ackdeck " + " ".join(_quote(a) for a in args), code, docs))
        return got


def _parsed(line: str) -> Any:
    """A JSON document, or the line itself when a command printed something else: the page
    shows what the command printed either way, and the build never fails on it."""
    try:
        return json.loads(line)
    except ValueError:
        return line


def _quote(arg: str) -> str:
    return arg if re.fullmatch(r"[\w./:=@-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


def _shape_of(doc: Any, tools: list[dict[str, Any]]) -> str | None:
    if not isinstance(doc, dict):
        return None
    for tool in tools:
        schema = tool.get("outputSchema") or {}
        if set(schema.get("properties", {})) == set(doc):
            return tool["name"]
    return None


def _error_kinds() -> list[str]:
    from ackdeck.core import errors

    out = ["| kind | exit code | meaning |", "| --- | --- | --- |"]
    for name in sorted(dir(errors)):
        cls = getattr(errors, name)
        if isinstance(cls, type) and issubclass(cls, errors.AckdeckError):
            doc = " ".join((cls.__doc__ or "").split())
            out.append(f"| `{name}` | {cls.exit_code} | {_cell(doc)} |")
    return [*out, ""]


def json_page(tools: list[dict[str, Any]]) -> str:
    out = [
        "# JSON shapes",
        "",
        "Every `--json` of the CLI and the structured content of every MCP tool come from "
        "one declaration per value (the type rooms and monitors return, a "
        "`core/base/struct.Struct`): the same keys and values on both doors. This page is "
        "generated when the site is built: the key tables from the "
        "`outputSchema` the MCP server publishes, the examples by running each command on a "
        "scratch home (paths, run ids, pids and times replaced by placeholders).",
        "",
        "## Result objects",
        "",
    ]
    seen: list[str] = []
    for tool in tools:
        schema = tool.get("outputSchema")
        if not schema:
            continue
        for obj in _objects(schema, schema, seen):
            title = obj.get("title", "result")
            users = [
                t["name"] for t in tools if (t.get("outputSchema") or {}).get("title") == title
            ]
            required = set(obj.get("required", []))
            out += [f"### {title}", ""]
            if users:
                out += ["Returned by " + ", ".join(f"`{u}`" for u in users) + ".", ""]
            out += ["| key | type |", "| --- | --- |"]
            for key, prop in obj["properties"].items():
                optional = "" if key in required else " (optional)"
                out.append(f"| `{key}` | {_cell(_type(prop, schema))}{optional} |")
            out.append("")
    out += ["## The CLI's `--json`, by example", ""]
    for command, code, docs in json_examples():
        out += [f"`{command}` (exit {code})", ""]
        for doc in docs:
            tool = _shape_of(doc, tools)
            if tool:
                out += [f"Same keys as the `{tool}` tool's result.", ""]
            if isinstance(doc, str):
                out += ["```text", doc, "```", ""]
            else:
                out += ["```json", json.dumps(doc, indent=2, ensure_ascii=False), "```", ""]
    out += [
        "## Errors",
        "",
        'An error is `{"error": KIND, "message": LINE}`: the CLI prints it on stdout with '
        "`--json`, beside the one line on stderr, and the MCP server sends the same object "
        "with its error results (a rejected tool argument adds `problems`, one "
        "`{argument, problem}` each). The kinds, from `ackdeck.core.errors`:",
        "",
        *_error_kinds(),
    ]
    return "\n".join(out) + "\n"


# ----- the hook ------------------------------------------------------------------------------
def generate() -> dict[str, str]:
    """Every generated page, by its path under docs/."""
    tools = list_tools()
    return {
        "reference/cli.md": cli_page(),
        "reference/mcp-tools.md": mcp_page(tools),
        "reference/json.md": json_page(tools),
        "changelog.md": (ROOT / "CHANGELOG.md").read_text(),
    }


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, content in generate().items():
        files.append(File.generated(config, path, content=content))
    for mount, folder in MOUNTS.items():
        for item in sorted(folder.iterdir()):
            if item.is_file():
                files.append(File.generated(config, f"{mount}/{item.name}", abs_src_path=str(item)))
    return files


FILES_MARK = "<!-- files: generated from ackdeck.core.base.locations -->"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """The configuration reference's list of files, from the module that names them."""
    if page.file.src_uri != "reference/configuration.md" or FILES_MARK not in markdown:
        return markdown
    from ackdeck.core.base import locations

    return markdown.replace(FILES_MARK, locations.reference_table())


def on_config(config: Any) -> Any:
    # A rebuild (`make docs-serve`) when the code changes, not only the pages.
    for folder in ("src", "screenshots"):
        if (ROOT / folder) not in [Path(w) for w in config.get("watch", [])]:
            config["watch"].append(str(ROOT / folder))
    config["watch"].append(str(ROOT / "CHANGELOG.md"))
    return config
