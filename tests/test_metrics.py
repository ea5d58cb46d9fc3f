"""`ackdeck metrics`: the Prometheus text of rooms, runs and wakes, parsed with
prometheus_client's own parser, printed once, served alone (`--serve`) and by `ackdeck web`,
scraped for real over loopback, with the page's host checks."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ackdeck.core.rooms.file.room import Room
from ackdeck.core.service.refs import open_room
from tests.helpers.cli import ACKDECK, ackdeck, ackdeck_json, ackdeck_ok
from tests.helpers.paths import REPO
from tests.helpers.wait import eventually


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(got: dict, metric: str, **labels: str) -> float:
    return got[(metric, tuple(sorted(labels.items())))]


@pytest.fixture
def phome(home: Path) -> Iterator[Path]:
    from tests.helpers.runs import run_and_cleanup

    yield from run_and_cleanup(home)


def test_metrics_once_carry_rooms_sessions_runs_and_wakes(
    tmp_path: Path, phome: Path, cli_env: dict[str, str], redis_server: object
) -> None:
    room = tmp_path / "inbox.txt"
    r = Room(room)
    r.push("one")
    r.push("two")
    r.read("agent")
    r.read("agent")  # the oldest line handed out twice
    r.push("three")
    url = redis_server.url()  # type: ignore[attr-defined]
    red = open_room(url)
    red.push("x")
    red.close()
    run = ["run", "job", "--session", "agent", "--monitor", "hello"]
    run_id = ackdeck_json(cli_env, *run, "--", "sh", "-c", "echo hello; echo done")["run_id"]
    eventually(  # the run ends on its own; wait for its status
        lambda: (
            (procs := ackdeck_json(cli_env, "ps")["processes"])
            and procs[0]["status"] == "exited"
            and procs[0]["matches"] >= 1
        ),
        what="the run to end with its match",
    )
    out = ackdeck(
        cli_env,
        "metrics",
        "--room",
        str(room),
        "--room",
        url,
        "--room",
        "redis://127.0.0.1:1/0/x",
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    got = samples(out.stdout)
    f, rd = "inbox.txt", url.rsplit("/", 1)[-1]
    assert value(got, "ackdeck_room_up", room=f) == 1
    assert value(got, "ackdeck_room_pending_lines", room=f) == 3
    assert value(got, "ackdeck_room_oldest_line_deliveries", room=f) == 2
    assert value(got, "ackdeck_room_pushed_total", room=f) == len(b"one\ntwo\nthree\n")
    assert value(got, "ackdeck_room_acked_lines_total", room=f) == 0
    assert value(got, "ackdeck_room_oldest_pending_age_seconds", room=f) >= 0
    assert value(got, "ackdeck_session_in_flight_lines", room=f, session="agent") == 2
    assert value(got, "ackdeck_session_unread_lines", room=f, session="agent") == 1
    assert value(got, "ackdeck_session_in_flight_age_seconds", room=f, session="agent") >= 0
    assert value(got, "ackdeck_room_up", room=rd) == 1
    assert value(got, "ackdeck_room_pending_lines", room=rd) == 1
    # One room that cannot be reached costs its own series only.
    assert value(got, "ackdeck_room_up", room="x") == 0
    assert ("ackdeck_room_pending_lines", (("room", "x"),)) not in got
    assert value(got, "ackdeck_run_status", name="job", run_id=run_id, status="exited") == 1
    assert value(got, "ackdeck_run_matches_total", name="job", run_id=run_id) == 1
    assert value(got, "ackdeck_run_exit_code", name="job", run_id=run_id) == 0
    assert value(got, "ackdeck_wake_pending", session="agent", name="job") >= 1
    assert value(got, "ackdeck_wake_delivered_total", session="agent", name="job") == 0


def test_the_numbers_are_the_ones_room_status_gives(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "r.txt"
    r = Room(room)
    for i in range(5):
        r.push(f"l{i}")
    r.read("a")
    r.ack("a")
    r.push("late")
    st = json.loads(ackdeck_ok(cli_env, "room", "status", str(room), "--json").stdout)["rooms"][0]
    out = ackdeck_ok(cli_env, "metrics", "--room", str(room), "--no-runs")
    got = samples(out.stdout)
    for key, metric in [
        ("pending", "ackdeck_room_pending_lines"),
        ("acked_total", "ackdeck_room_acked_lines_total"),
        ("preserved_total", "ackdeck_room_preserved_lines_total"),
        ("pushed_total", "ackdeck_room_pushed_total"),
        ("dead_total", "ackdeck_room_dead_lettered_lines_total"),
    ]:
        assert value(got, metric, room="r.txt") == st[key], key
    assert not any(name.startswith("ackdeck_run") for name, _ in got)


def test_metrics_take_the_rooms_of_a_dashboard_config(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    (tmp_path / "a.txt").write_bytes(b"1\n2\n")
    (tmp_path / "dash.toml").write_text('rooms = ["a.txt"]\nsession = "owner"\n')
    out = ackdeck_ok(cli_env, "metrics", "--config", str(tmp_path / "dash.toml"), "--no-runs")
    assert value(samples(out.stdout), "ackdeck_room_pending_lines", room="a.txt") == 2
    bad = ackdeck(cli_env, "metrics", "--config", str(tmp_path / "nope.toml"))
    assert bad.returncode == 1 and "cannot read config" in bad.stderr


def _serving(proc: subprocess.Popen[str], pattern: str) -> int:
    """The port a server printed in its banner (stderr)."""
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    seen = ""
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            raise AssertionError(f"server exited: {seen}")
        seen += line
        m = re.search(pattern, line)
        if m:
            return int(m.group(1))
    raise AssertionError(f"no banner: {seen}")


def _get(port: int, host: str | None = None) -> tuple[int, str, str]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if host is not None:
        req.add_header("Host", host)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def _stop(proc: subprocess.Popen[str]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_metrics_serve_answers_a_real_scrape_and_refuses_other_hosts(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "r.txt"
    Room(room).push("x")
    proc = subprocess.Popen(
        [*ACKDECK, "metrics", "--room", str(room), "--no-runs", "--serve", "0"],
        env=cli_env,
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        port = _serving(proc, r"serving http://127\.0\.0\.1:(\d+)/metrics")
        code, ctype, body = _get(port)
        assert code == 200 and ctype.startswith("text/plain")
        assert value(samples(body), "ackdeck_room_pending_lines", room="r.txt") == 1
        Room(room).push("y")  # computed per scrape
        assert value(samples(_get(port)[2]), "ackdeck_room_pending_lines", room="r.txt") == 2
        code, _, body = _get(port, host="evil.example:80")  # a DNS-rebinding name
        assert code == 403 and "not a loopback address" in body
    finally:
        _stop(proc)


def test_ackdeck_web_serves_metrics_beside_the_page_with_its_host_checks(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "r.txt"
    Room(room).push("x")
    proc = subprocess.Popen(
        [*ACKDECK, "web", "--port", "0", "--room", str(room)],
        env=cli_env,
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        port = _serving(proc, r"serving the dashboard on http://127\.0\.0\.1:(\d+)")
        code, _, body = _get_when_bound(port)
        assert code == 200
        assert value(samples(body), "ackdeck_room_pending_lines", room="r.txt") == 1
        code, _, body = _get(port, host="evil.example")
        assert code == 403 and "not a loopback address" in body
    finally:
        _stop(proc)


def _get_when_bound(port: int) -> tuple[int, str, str]:
    """A scrape once the server listens (`ackdeck web` prints its banner just before it
    binds)."""

    def scraped() -> tuple[int, str, str] | None:
        try:
            return _get(port)
        except (urllib.error.URLError, ConnectionError):
            return None

    return eventually(scraped, what=f"a server listening on port {port}", every=0.1)


@pytest.mark.parametrize(
    ("argv", "banner"),
    [
        (["metrics", "--no-runs", "--serve", "0"], r"serving http://127\.0\.0\.1:(\d+)/metrics"),
        (["web", "--port", "0"], r"serving the dashboard on http://127\.0\.0\.1:(\d+)"),
    ],
    ids=["metrics-serve", "web"],
)
def test_an_idle_connection_held_open_does_not_delay_a_scrape(
    tmp_path: Path, cli_env: dict[str, str], argv: list[str], banner: str
) -> None:
    """One client that connects and sends nothing (or half a request) held every scrape of
    `metrics --serve` behind it: the server answered one connection at a time, with no read
    timeout. Scrapes are answered while it stays open."""
    import socket

    room = tmp_path / "r.txt"
    Room(room).push("x")
    proc = subprocess.Popen(
        [*ACKDECK, *argv, "--room", str(room)],
        env=cli_env,
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        port = _serving(proc, banner)
        _get_when_bound(port)
        with socket.create_connection(("127.0.0.1", port), timeout=60) as idle, \
                socket.create_connection(("127.0.0.1", port), timeout=60) as half:  # fmt: skip
            half.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
            for _ in range(3):
                code, _, body = _get(port)  # urlopen's 60 s bound: the server never answered
                assert code == 200
                assert value(samples(body), "ackdeck_room_pending_lines", room="r.txt") == 1
            assert idle.fileno() >= 0 and half.fileno() >= 0
    finally:
        _stop(proc)


def test_the_metrics_server_closes_a_connection_that_sends_nothing(tmp_path: Path) -> None:
    """The read timeout: a connection that never completes its request is closed by the
    server (the thread serving it ends), so idle clients cannot pile up for ever."""
    import socket
    import threading

    from ackdeck.core.service import metrics

    room = tmp_path / "r.txt"
    Room(room).push("x")
    server = metrics.server("127.0.0.1", 0, [str(room)], None, read_timeout=0.5)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        port = server.server_address[1]
        with socket.create_connection(("127.0.0.1", port), timeout=60) as idle:
            idle.sendall(b"GET /metrics HTTP/1.1\r\n")  # and then nothing
            assert _get(port)[0] == 200
            assert idle.recv(4096) == b""  # closed by the server (recv's bound: 60 s)
    finally:
        server.shutdown()
        server.server_close()
        serving.join(timeout=60)


def _calls_of(fn: Callable[[], object]) -> int:
    """How many Python functions `fn()` calls, all told (a cost that does not depend on the
    machine's speed or load)."""
    import sys

    n = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal n
        if event == "call":
            n += 1

    sys.setprofile(count)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return n


@pytest.mark.parametrize("door", ["metrics", "room status"])
def test_a_scrape_costs_the_same_per_room_at_any_number_of_rooms(tmp_path: Path, door: str) -> None:
    """Labelling each room by comparing it with every other made a scrape quadratic (95 s over
    10,000 rooms). Counted in calls, not timed: twice the rooms cost twice the calls (a
    quadratic step makes it three times and more at these sizes)."""
    from ackdeck.core.service import metrics
    from ackdeck.core.service.deck import Deck

    def rooms(n: int) -> list[str]:
        specs = []
        for i in range(n):
            r = tmp_path / f"p{i}" / "inbox.txt"  # one name for all: every label is a path
            if not r.exists():
                r.parent.mkdir()
                Room(r).push("x")
            specs.append(str(r))
        return specs

    def scrape(specs: list[str]) -> Callable[[], object]:
        if door == "metrics":
            return lambda: metrics.exposition(specs, None)
        return lambda: Deck(None, None, specs).status().to_json()

    small, large = rooms(200), rooms(400)
    scrape(small)()  # imports and first-use work, out of the count
    ratio = _calls_of(scrape(large)) / _calls_of(scrape(small))
    assert ratio < 2.4, f"twice the rooms cost {ratio:.2f} times the calls"


def test_metrics_carry_each_agent_sessions_state(
    tmp_path: Path, home: Path, cli_env: dict[str, str]
) -> None:
    """Issue 32: one series per session and state (1 on the current one), from the same
    result `ackdeck agents` shows."""
    from ackdeck.core.presence import log

    room = tmp_path / "inbox.txt"
    room.write_bytes(b"one\n")
    log.record(home, "busy", "start", rooms=[str(room)])
    log.record(home, "busy", "prompt")
    log.record(home, "asks", "notify", detail="permission_prompt: may I?")
    out = subprocess.run(
        [*ACKDECK, "metrics"], env=cli_env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    got = samples(out.stdout)
    assert value(got, "ackdeck_agent_state", session="busy", state="working") == 1
    assert value(got, "ackdeck_agent_state", session="busy", state="idle") == 0
    assert value(got, "ackdeck_agent_state", session="asks", state="waiting") == 1
    assert value(got, "ackdeck_agent_unread_lines", session="busy") == 1
    assert value(got, "ackdeck_agent_state_since_seconds", session="asks") >= 0
    listed = json.loads(
        subprocess.run(
            [*ACKDECK, "agents", "--json"], env=cli_env, capture_output=True, text=True
        ).stdout
    )
    assert {a["session"]: a["state"] for a in listed["agents"]} == {
        "asks": "waiting",
        "busy": "working",
    }
