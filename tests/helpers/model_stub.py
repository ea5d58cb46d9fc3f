"""A loopback stand-in of three model APIs that plays a script and records what the model got.

Real agent clients (Claude Code, Codex CLI, Gemini CLI) run their whole loop against it: each
model turn they send is answered with the script's next step (a tool call or a final text), in
the API's own streaming format, and every request body is kept, because a request body is
exactly what the model would have received (the tool results the client chose to show it).
Requests that are not turns (Claude Code's token counting, Gemini CLI's routing and
next-speaker checks, a client's side questions without tools) are answered without using a
step. A step may carry `before`, run when the turn that answers with it arrives: that is
between two model turns, after the previous tool result reached the model and before its next
call (a producer pushing lines between a read and its ack).

APIs: Anthropic Messages (`POST /v1/messages`, SSE; `/v1/messages/count_tokens`), OpenAI
Responses (`POST /v1/responses`, SSE), Gemini (`:generateContent` answered from the JSON
schema it sends, `:streamGenerateContent?alt=sse`).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Call:
    """The model calls a tool. `name` as the client lists it (`mcp__ackdeck__room_ack`,
    `ToolSearch`, `mcp_ackdeck_room_ack`); for Codex, `namespace` holds `mcp__ackdeck`."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    namespace: str | None = None
    before: Callable[[], None] | None = None
    id: str = ""  # set by the stub when the step is played


@dataclass
class Search:
    """Codex's client-side `tool_search` (loads deferred tools)."""

    query: str
    limit: int = 20
    before: Callable[[], None] | None = None
    id: str = ""


@dataclass
class Say:
    """The model answers with text and ends its turn."""

    text: str = "done"
    before: Callable[[], None] | None = None


@dataclass
class Together:
    """The model calls several tools in one turn (Anthropic only: one message, several
    tool_use blocks). Each call gets its own id, as in `Call`."""

    calls: list[Call]
    before: Callable[[], None] | None = None


Step = Call | Search | Say | Together


@dataclass
class Request:
    api: str  # "anthropic" | "openai" | "gemini"
    path: str
    body: dict[str, Any]
    turn: bool  # it consumed a script step


class ModelStub:
    def __init__(self, script: list[Step], ids: str = "call", chars_per_token: float = 4.0) -> None:
        """`ids`: the prefix of the tool-call ids this stub hands out (`call_0`, ...); a
        resumed session's second stub needs another, as a model never repeats an id.
        `chars_per_token`: how densely `count_tokens` says this model tokenises (4, as the
        clients estimate; fewer for a model whose tokens are shorter than a client guessed)."""
        self.script = list(script)
        self._ids = ids
        self._chars_per_token = chars_per_token
        self.requests: list[Request] = []
        self.errors: list[str] = []  # a `before` that raised: the test fails on it
        self._lock = threading.Lock()
        self._played = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # model lists and the like: nothing to offer
                self._json(200, {"data": [], "models": []})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode(errors="replace")}
                stub._serve(self, self.path, body)

            def _json(self, code: int, doc: Any) -> None:
                data = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def sse(self, events: list[tuple[str | None, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for name, data in events:
                    head = f"event: {name}\n" if name else ""
                    self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

        self._handler = Handler
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ModelStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ----- what the model received -------------------------------------------------------------
    def turns(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.turn]

    def result_of(self, step: Call | Search) -> str:
        """The tool result the model received for `step`, as text (as the client put it in the
        next turn's request); AssertionError if no turn carried it."""
        for body in self.turns():
            for call_id, text in tool_results(body):
                if call_id == step.id:
                    return text
        raise AssertionError(f"no request carried the result of {step}")

    # ----- serving -----------------------------------------------------------------------------
    def _next(self, turn: bool) -> Step:
        if not turn:
            return Say("ok")
        with self._lock:
            i = self._played
            self._played += 1
        step = self.script[i] if i < len(self.script) else Say("done")
        if isinstance(step, Call | Search):
            step.id = f"{self._ids}_{i}"
        if isinstance(step, Together):
            for j, c in enumerate(step.calls):
                c.id = f"{self._ids}_{i}_{j}"
        if step.before is not None:
            try:
                step.before()
            except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
                self.errors.append(f"step {i}: {e!r}")
        return step

    def _serve(self, h: Any, path: str, body: dict[str, Any]) -> None:
        route = path.split("?")[0]
        if route.endswith("/count_tokens"):
            self._record("anthropic", path, body, False)
            # about 4 characters a token, as the clients themselves estimate, unless told
            tokens = int(len(json.dumps(body)) / self._chars_per_token)
            h._json(200, {"input_tokens": max(1, tokens)})
        elif route.endswith("/v1/messages"):
            turn = bool(body.get("tools"))
            self._record("anthropic", path, body, turn)
            step = self._next(turn)
            if body.get("stream"):
                h.sse(list(anthropic_events(step, body.get("model", "stub"))))
            else:
                h._json(200, anthropic_message(step, body.get("model", "stub")))
        elif route.endswith("/responses"):
            turn = bool(body.get("tools"))
            self._record("openai", path, body, turn)
            h.sse(list(openai_events(self._next(turn))))
        elif ":streamGenerateContent" in route:
            turn = bool(body.get("tools"))
            self._record("gemini", path, body, turn)
            h.sse([(None, gemini_chunk(self._next(turn)))])
        elif ":generateContent" in route:
            self._record("gemini", path, body, False)
            h._json(200, gemini_json_answer(body))
        elif ":countTokens" in route:
            self._record("gemini", path, body, False)
            h._json(200, {"totalTokens": 100})
        else:
            self._record("unknown", path, body, False)
            h._json(404, {"error": {"message": f"stub: no route {path}"}})

    def _record(self, api: str, path: str, body: dict[str, Any], turn: bool) -> None:
        with self._lock:
            self.requests.append(Request(api, path, body, turn))


# ----- what a request body says the model received ---------------------------------------------
def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text(c.get("text", c.get("content", ""))) for c in content)
    return json.dumps(content)


def tool_results(body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(call id, the result's text as the model sees it) for every tool result in a turn."""
    for msg in body.get("messages", []):  # Anthropic
        if isinstance(msg.get("content"), list):
            for block in msg["content"]:
                if block.get("type") == "tool_result":
                    yield block["tool_use_id"], _text(block.get("content", ""))
    for item in body.get("input", []) if isinstance(body.get("input"), list) else []:  # OpenAI
        if item.get("type") in ("function_call_output", "tool_search_output"):
            out = item.get("output", item.get("tools"))
            yield item.get("call_id", ""), _text(out)
    for content in body.get("contents", []):  # Gemini
        for part in content.get("parts", []):
            if "functionResponse" in part:
                fr = part["functionResponse"]
                out = (fr.get("response") or {}).get("output")
                yield (
                    fr.get("id", ""),
                    out if isinstance(out, str) else json.dumps(fr.get("response")),
                )


def tool_names(body: dict[str, Any]) -> set[str]:
    """Every tool name the model is offered in a turn, loaded or deferred (Anthropic: a tool
    or a name in the deferred-tools text; OpenAI: functions and namespaces' members; Gemini:
    function declarations)."""
    names: set[str] = set()
    for t in body.get("tools", []):
        if "name" in t:
            names.add(t["name"])
        for sub in t.get("tools", []):  # an OpenAI namespace
            if "name" in sub:
                names.add(f"{t.get('name')}__{sub['name']}")
        for fd in t.get("functionDeclarations", []) or t.get("function_declarations", []):
            names.add(fd["name"])
    return names


# ----- Anthropic Messages ----------------------------------------------------------------------
def _message_id() -> str:
    """A new id for each response, as the real APIs give (Claude Code records it with every
    content block of the response: blocks with one id came in one turn)."""
    return f"msg_stub_{uuid.uuid4().hex[:12]}"


def anthropic_events(step: Step, model: str) -> Iterator[tuple[str, Any]]:
    usage = {"input_tokens": 10, "output_tokens": 1}
    msg = {
        "id": _message_id(),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    yield "message_start", {"type": "message_start", "message": msg}
    if isinstance(step, Together):
        for i, c in enumerate(step.calls):
            block = {"type": "tool_use", "id": c.id, "name": c.name, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(c.args)}
            start = {"type": "content_block_start", "index": i, "content_block": block}
            yield "content_block_start", start
            yield "content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}
            yield "content_block_stop", {"type": "content_block_stop", "index": i}
        delta_end = {"stop_reason": "tool_use", "stop_sequence": None}
        yield (
            "message_delta",
            {"type": "message_delta", "delta": delta_end, "usage": {"output_tokens": 5}},
        )
        yield "message_stop", {"type": "message_stop"}
        return
    if isinstance(step, Call):
        block = {"type": "tool_use", "id": step.id, "name": step.name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(step.args)}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": step.text if isinstance(step, Say) else "?"}
        stop = "end_turn"
    yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}
    yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def anthropic_message(step: Step, model: str) -> dict[str, Any]:
    if isinstance(step, Call):
        content = [{"type": "tool_use", "id": step.id, "name": step.name, "input": step.args}]
    else:
        content = [{"type": "text", "text": step.text if isinstance(step, Say) else "?"}]
    return {
        "id": _message_id(),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if isinstance(step, Call) else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


# ----- OpenAI Responses ------------------------------------------------------------------------
def openai_events(step: Step) -> Iterator[tuple[str, Any]]:
    yield "response.created", {"type": "response.created", "response": {"id": "resp_stub"}}
    if isinstance(step, Call):
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{step.id}",
            "call_id": step.id,
            "name": step.name,
            "arguments": json.dumps(step.args),
        }
        if step.namespace:
            item["namespace"] = step.namespace
    elif isinstance(step, Search):
        item = {
            "type": "tool_search_call",
            "id": f"ts_{step.id}",
            "call_id": step.id,
            "execution": "client",
            "status": "completed",
            "arguments": {"query": step.query, "limit": step.limit},
        }
    else:
        item = {
            "type": "message",
            "role": "assistant",
            "id": _message_id(),
            "content": [{"type": "output_text", "text": getattr(step, "text", "?")}],
        }
    yield (
        "response.output_item.added",
        {"type": "response.output_item.added", "output_index": 0, "item": item},
    )
    yield (
        "response.output_item.done",
        {"type": "response.output_item.done", "output_index": 0, "item": item},
    )
    usage = {
        "input_tokens": 10,
        "input_tokens_details": None,
        "output_tokens": 5,
        "output_tokens_details": None,
        "total_tokens": 15,
    }
    yield (
        "response.completed",
        {"type": "response.completed", "response": {"id": "resp_stub", "usage": usage}},
    )


# ----- Gemini ----------------------------------------------------------------------------------
_GEMINI_USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


def gemini_chunk(step: Step) -> dict[str, Any]:
    if isinstance(step, Call):
        part: dict[str, Any] = {
            "functionCall": {"name": step.name, "args": step.args, "id": step.id}
        }
    else:
        part = {"text": step.text if isinstance(step, Say) else "?"}
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": _GEMINI_USAGE,
    }


def _from_schema(schema: dict[str, Any]) -> Any:
    """A value that fits a JSON schema: the routing and next-speaker questions Gemini CLI asks
    (an enum answers its first value, except that "user" speaks next)."""
    if "enum" in schema:
        return "user" if "user" in schema["enum"] else schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {k: _from_schema(v) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 0
    if kind == "boolean":
        return False
    return "stub"


def gemini_json_answer(body: dict[str, Any]) -> dict[str, Any]:
    config = body.get("generationConfig", {})
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    text = json.dumps(_from_schema(schema)) if schema else "ok"
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": _GEMINI_USAGE,
    }


# ----- a team: one script per agent ------------------------------------------------------------
AGENT_HEADER = "x-claude-code-agent-id"  # `NAME@TEAM` on an in-process teammate's requests
TEAMMATE_PROMPT = "# Agent Teammate Communication"  # in every teammate's system prompt
LEAD = "team-lead"  # what `agent_of` names the lead's own requests


def agent_of(headers: Any, body: dict[str, Any]) -> str:
    """Who in a Claude Code team (2.1.328) made a request: the teammate's name from the
    `x-claude-code-agent-id` header (`worker@session-…`), "team-lead" for the lead's own
    requests. Observed offline: the header is on every request of an in-process teammate and
    never on the lead's; both carry the same session-id header, and the teammate's name is
    nowhere in its system prompt, which only says it is a teammate (kept as a fallback:
    "teammate" when the header is missing but the prompt says so)."""
    agent = headers.get(AGENT_HEADER) if headers is not None else None
    if agent:
        return str(agent).split("@", 1)[0]
    if TEAMMATE_PROMPT in json.dumps(body.get("system", "")):
        return "teammate"
    return "team-lead"


class TeamStub(ModelStub):
    """A scripted model for a Claude Code team: each agent (by `agent_of`) plays its own
    script, so the lead's steps are never taken by a teammate's turn. A script is a list of
    steps, or a function of (the agent's turn number, the request body) giving the step.
    `hold`: called with (agent, request body) for each turn; True keeps that request
    unanswered until the stub shuts down (a model that never answers: the turn runs, then
    the process is killed).
    `fail`: likewise; True answers that request with an API error (400) instead.
    Every turn is kept in `by_agent` as (agent, body), in arrival order."""

    def __init__(
        self,
        scripts: dict[str, list[Step] | Callable[[int, dict[str, Any]], Step]],
        *,
        ids: str = "call",
        hold: Callable[[str, dict[str, Any]], bool] | None = None,
        fail: Callable[[str, dict[str, Any]], bool] | None = None,
    ) -> None:
        super().__init__([], ids=ids)
        self._fail = fail
        self.scripts = {k: v if callable(v) else list(v) for k, v in scripts.items()}
        self.by_agent: list[tuple[str, dict[str, Any]]] = []
        self.held: list[tuple[str, dict[str, Any]]] = []
        # Turns whose header and system prompt disagreed (see agent_of): a test asserts none.
        self.unsure: list[tuple[str, bool]] = []
        self._hold = hold
        self._release = threading.Event()
        self._counts: dict[str, int] = {}

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        super().__exit__(*exc)

    def turns_of(self, agent: str) -> list[dict[str, Any]]:
        return [b for a, b in self.by_agent if a == agent]

    @property
    def played(self) -> dict[str, int]:
        """How many turns each agent has asked for so far."""
        with self._lock:
            return dict(self._counts)

    def _serve(self, h: Any, path: str, body: dict[str, Any]) -> None:
        route = path.split("?")[0]
        if not (route.endswith("/v1/messages") and body.get("tools")):
            super()._serve(h, path, body)  # side queries, token counts: no script step
            return
        agent = agent_of(h.headers, body)
        teammate_prompt = TEAMMATE_PROMPT in json.dumps(body.get("system", ""))
        if (agent != "team-lead") != teammate_prompt or agent == "teammate":
            # The header and the system prompt disagree on who asks: routing is unsure.
            self.unsure.append((agent, teammate_prompt))
        self._record("anthropic", path, body, True)
        with self._lock:
            self.by_agent.append((agent, body))
            i = self._counts.get(agent, 0)
            self._counts[agent] = i + 1
        if self._fail is not None and self._fail(agent, body):
            # A request the API refuses (400, not retried): the turn ends without an answer.
            error = {"type": "invalid_request_error", "message": "stub: refused"}
            h._json(400, {"type": "error", "error": error})
            return
        if self._hold is not None and self._hold(agent, body):
            with self._lock:
                self.held.append((agent, body))
            self._release.wait()  # never answered while the test runs
            return
        script = self.scripts.get(agent, [])
        if callable(script):
            step = script(i, body)
        else:
            step = script[i] if i < len(script) else Say("done")
        if isinstance(step, Call | Search):
            step.id = f"{self._ids}_{agent}_{i}"
        if step.before is not None:
            try:
                step.before()
            except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
                self.errors.append(f"{agent} step {i}: {e!r}")
        h.sse(list(anthropic_events(step, body.get("model", "stub"))))


def last_user_text(body: dict[str, Any]) -> str:
    """The text of a request's last user message (what just arrived: a prompt, a teammate's
    message, a tool result)."""
    for msg in reversed(body.get("messages", [])):
        if msg.get("role") == "user":
            return _text(msg.get("content", ""))
    return ""
