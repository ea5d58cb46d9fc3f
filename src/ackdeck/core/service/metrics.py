"""Prometheus metrics of rooms, runs and wake records, in the text exposition format.

Every number comes from the service's own results (`rooms.status`, `procs.list_runs`,
`wakes.list_wakes`), so a scrape, `room status` and the dashboard agree. Computed at scrape
time by a collector (nothing is cached between scrapes), with `prometheus_client` building the
text, so escaping, types and `_total` suffixes follow its spec. Imported only by `ackdeck
metrics` and the web server's `/metrics`: never on a per-turn command.

A room that cannot be read (an unreachable redis server, a refused path) has
`ackdeck_room_up 0` and no other series: a scrape never fails because of one room.
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ackdeck.core.errors import InvalidInput
from ackdeck.core.service.deck import Deck

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _Families:
    """The metric families of one scrape, each declared once (name, type, help, labels)."""

    def __init__(self) -> None:
        self.all: list[Metric] = []

    def gauge(self, name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
        m = GaugeMetricFamily(name, doc, labels=labels)
        self.all.append(m)
        return m

    def counter(self, name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
        m = CounterMetricFamily(name, doc, labels=labels)
        self.all.append(m)
        return m


def _room_metrics(f: _Families, deck: Deck) -> None:
    R, S = ["room"], ["room", "session"]
    up = f.gauge("ackdeck_room_up", "1 if the room could be read at this scrape, else 0", R)
    pending = f.gauge("ackdeck_room_pending_lines", "complete lines in the room (not acked)", R)
    partial = f.gauge("ackdeck_room_partial_bytes", "bytes of a line being written", R)
    oldest = f.gauge(
        "ackdeck_room_oldest_pending_age_seconds", "age of the oldest line in the room", R
    )
    nobody = f.gauge(
        "ackdeck_room_oldest_unread_age_seconds", "age of the oldest line no session has read", R
    )
    deliveries = f.gauge(
        "ackdeck_room_oldest_line_deliveries",
        "reads that handed out the oldest line without an ack since",
        R,
    )
    unlogged = f.gauge(
        "ackdeck_room_reads_unlogged", "reads the read log misses (it could not be written)", R
    )
    overdue = f.gauge(
        "ackdeck_room_overdue", "1 if a line waits longer than the room's overdue threshold", R
    )
    acked = f.counter("ackdeck_room_acked_lines", "lines acked (removed) ever", R)
    preserved = f.counter(
        "ackdeck_room_preserved_lines", "lines acks kept because they were not read", R
    )
    pushed = f.counter(
        "ackdeck_room_pushed", "bytes (file rooms) or entries (redis rooms) ever appended", R
    )
    dead = f.counter("ackdeck_room_dead_lettered_lines", "lines moved to the dead-letter room", R)
    in_flight = f.gauge("ackdeck_session_in_flight_lines", "lines read and not acked", S)
    unread = f.gauge("ackdeck_session_unread_lines", "lines the session has not read", S)
    in_flight_age = f.gauge(
        "ackdeck_session_in_flight_age_seconds", "time since the unacked read", S
    )
    unread_age = f.gauge(
        "ackdeck_session_unread_age_seconds", "age of the session's oldest unread line", S
    )
    for label, row in deck.status_each():
        if row is None:
            up.add_metric([label], 0)
            continue
        st = row
        up.add_metric([label], 1)
        pending.add_metric([label], st.pending)
        partial.add_metric([label], st.partial_bytes)
        if row.oldest_pending_age is not None:
            oldest.add_metric([label], row.oldest_pending_age)
        if row.oldest_unread_age is not None:
            nobody.add_metric([label], row.oldest_unread_age)
        deliveries.add_metric([label], st.deliveries)
        unlogged.add_metric([label], st.reads_unlogged)
        overdue.add_metric([label], 1 if row.overdue else 0)
        acked.add_metric([label], st.acked_total)
        preserved.add_metric([label], st.preserved_total)
        pushed.add_metric([label], st.pushed_total)
        dead.add_metric([label], st.dead_total)
        for name, s in row.sessions.items():
            in_flight.add_metric([label, name], s.in_flight)
            unread.add_metric([label, name], s.unread)
            if s.in_flight_age is not None:
                in_flight_age.add_metric([label, name], s.in_flight_age)
            if s.unread_age is not None:
                unread_age.add_metric([label, name], s.unread_age)


def _queue_metrics(f: _Families, deck: Deck) -> None:
    """Per queue room (core/rooms/queue.py): leases running, leases ended and not claimed
    again, lines dead-lettered. A room that cannot be looked at is left out (ackdeck_room_up
    says so)."""
    from ackdeck.core.errors import AckdeckError
    from ackdeck.core.service.queue import file_queue

    R = ["room"]
    claimed = f.gauge("ackdeck_queue_claimed_lines", "queue lines whose lease runs", R)
    expired = f.gauge(
        "ackdeck_queue_expired_lines",
        "queue lines whose lease ended (or was released), not claimed again yet",
        R,
    )
    dead = f.counter("ackdeck_queue_dead_lines", "queue lines moved to the dead-letter room", R)
    for ref in deck.rooms:
        label = deck.label(ref)
        try:
            room = deck.open(ref)
            try:
                if not room.policy().queue:
                    continue
                view = file_queue(room).view(limit=0)
            finally:
                room.close()
        except AckdeckError:
            continue
        claimed.add_metric([label], view.claimed)
        expired.add_metric([label], view.expired)
        dead.add_metric([label], view.dead)


def _run_metrics(f: _Families, home: Path) -> None:
    from ackdeck.core.service import procs, wakes

    L = ["name", "run_id"]
    status = f.gauge("ackdeck_run_status", "1 for the run's current status", [*L, "status"])
    matches = f.counter("ackdeck_run_matches", "monitor matches in the run", L)
    exit_code = f.gauge("ackdeck_run_exit_code", "the run's exit code, once it ended", L)
    for run in procs.list_runs(home, latest_only=True).runs:
        status.add_metric([run.name, run.run_id, run.status], 1)
        matches.add_metric([run.name, run.run_id], run.matches)
        if run.exit_code is not None:
            exit_code.add_metric([run.name, run.run_id], run.exit_code)
    W = ["session", "name"]
    pending = f.gauge("ackdeck_wake_pending", "items waiting to be delivered", W)
    delivered = f.counter("ackdeck_wake_delivered", "items delivered to the session", W)
    superseded = f.counter(
        "ackdeck_wake_superseded", "matches dropped because the session was already shown", W
    )
    for w in wakes.list_wakes(home).wakes:
        pending.add_metric([w.session, w.name], w.pending)
        delivered.add_metric([w.session, w.name], w.delivered_total)
        superseded.add_metric([w.session, w.name], w.superseded_total)
    _agent_metrics(f, home)
    _message_metrics(f, home)


def _message_metrics(f: _Families, home: Path) -> None:
    """How many of Claude Code's messages between agents are in each fate (`ackdeck
    messages`): an alert can say `ackdeck_claude_messages{fate="lost"} > 0`. Each scrape
    reads only what the transcripts gained since the last look."""
    from ackdeck.core.service.claude_messages import list_messages
    from ackdeck.core.service.message_fates import FATES

    fates = f.gauge(
        "ackdeck_claude_messages", "Claude Code's messages between agents, by fate", ["fate"]
    )
    found = list_messages(home=home)
    for fate in FATES:
        fates.add_metric([fate], found.counts.get(fate, 0))


def _agent_metrics(f: _Families, home: Path) -> None:
    """Each session's presence (`ackdeck agents`): a 1 on its current state, a 0 on the
    others (so an alert can say `ackdeck_agent_state{state="stalled"} == 1`)."""
    from ackdeck.core.presence.model import STATES
    from ackdeck.core.service.agents import list_agents

    S = ["session"]
    state = f.gauge("ackdeck_agent_state", "1 for the session's current state", [*S, "state"])
    since = f.gauge(
        "ackdeck_agent_state_since_seconds", "seconds the session has been in its state", S
    )
    unread = f.gauge("ackdeck_agent_unread_lines", "lines in its rooms it has not read", S)
    nudges = f.gauge("ackdeck_agent_nudges_unanswered", "nudges since its last read", S)
    listed = list_agents(home)
    for a in listed.agents:
        for st in STATES:
            state.add_metric([a.session, st], 1 if a.state == st else 0)
        if a.since is not None:
            since.add_metric([a.session], max(0.0, listed.checked_at - a.since))
        unread.add_metric([a.session], a.unread)
        nudges.add_metric([a.session], a.nudges_unanswered)


class AckdeckCollector(Collector):
    """Collects at each scrape: rooms (specs: paths or redis URLs), runs and wakes of `home`."""

    def __init__(self, specs: Sequence[str], home: Path | None) -> None:
        # The rooms are parsed and labelled once, as `room status` labels them (counting the
        # short names in one pass: comparing each room with every other made a scrape over
        # 10,000 rooms take 95 s); an invalid one is refused here, before anything is served.
        # Opened with `home`: a Claude Code task list's queue state lives there.
        self.deck = Deck(home, None, specs)
        self.home = home

    def collect(self) -> Iterator[Metric]:
        f = _Families()
        _room_metrics(f, self.deck)
        _queue_metrics(f, self.deck)
        if self.home is not None:
            _run_metrics(f, self.home)
        yield from f.all


def registry(specs: Sequence[str], home: Path | None) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(AckdeckCollector(specs, home))
    return reg


def exposition(specs: Sequence[str], home: Path | None) -> bytes:
    """The text exposition of one scrape."""
    return generate_latest(registry(specs, home))


def rooms_of_config(path: str | os.PathLike[str]) -> tuple[list[str], Path | None]:
    """The `rooms` and `home` of a dashboard config file (TOML; relative room paths are
    relative to the file, as the dashboard reads them). Other keys are the dashboard's."""
    p = Path(path).expanduser()
    try:
        doc: dict[str, Any] = tomllib.loads(p.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read config {p}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"config {p} is not valid TOML: {exc}") from None
    raw = doc.get("rooms", [])
    if not isinstance(raw, list) or not all(isinstance(r, str) for r in raw):
        raise InvalidInput(f"config {p}: rooms must be a list of paths or redis:// URLs")
    from ackdeck.core.rooms.room_spec import is_url

    # os.path: 3,000 rooms listed cost 60 ms as Path objects.
    base = os.path.abspath(p.parent)
    rooms = [r if is_url(r) else os.path.join(base, os.path.expanduser(r)) for r in raw]
    home = doc.get("home")
    return rooms, (p.parent / Path(home).expanduser()).absolute() if home else None


# ----- serving ---------------------------------------------------------------------------------
Checker = Callable[[str], "str | None"]  # Host header -> why refused (None: serve it)

# Seconds a connection may take to send its request, and each write of the answer: a scrape's
# request is one small packet, and Prometheus gives up on a scrape after 10 s by default.
READ_TIMEOUT = 10.0


def server(
    host: str,
    port: int,
    specs: Sequence[str],
    home: Path | None,
    *,
    read_timeout: float = READ_TIMEOUT,
) -> Any:
    """A WSGI server of `wsgi_app` on `host:port` (0: a free port), bound and not yet serving
    (`serve_forever`). Each connection is served in its own thread and each of its reads and
    writes is bounded by `read_timeout`: a client that connects and sends nothing (or half a
    request) is dropped in time and never holds another scrape behind it. Raises OSError when
    it cannot bind."""
    import socket
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

    from ackdeck.core.base.hostcheck import LOOPBACK, refusal

    loopback = host in LOOPBACK

    def check(h: str) -> str | None:
        return refusal(h, None, loopback=loopback, websocket=False)

    class Handler(WSGIRequestHandler):
        timeout = read_timeout  # socketserver sets it on the connection

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # one line per scrape on stderr would drown the refusals

    class Server(ThreadingMixIn, WSGIServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        daemon_threads = True  # a client still connected never keeps ackdeck from exiting
        block_on_close = False

        def handle_error(self, request: Any, client_address: Any) -> None:
            # A client that timed out or went away is that client's business: no traceback.
            if isinstance(sys.exc_info()[1], (TimeoutError, ConnectionError)):
                return
            super().handle_error(request, client_address)

    srv = Server((host, port), Handler)
    srv.set_app(wsgi_app(specs, home, check))
    return srv


def wsgi_app(specs: Sequence[str], home: Path | None, check: Checker) -> Callable[..., Any]:
    """A WSGI app serving `/metrics` (prometheus_client's own, which also honours `name[]=`
    and gzip) behind the host check of the web page; anything else is 404."""
    from prometheus_client import make_wsgi_app

    inner = make_wsgi_app(registry(specs, home))

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        host = environ.get("HTTP_HOST") or environ.get("SERVER_NAME", "")
        why = check(host)
        if why is not None:
            print(f"ackdeck metrics: refused a request: {why}", file=sys.stderr, flush=True)
            start_response("403 Forbidden", [("Content-Type", "text/plain")])
            return [f"ackdeck metrics: {why}\n".encode()]
        if environ.get("PATH_INFO") != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"ackdeck metrics: only /metrics is served here\n"]
        return inner(environ, start_response)

    return app
