"""A loopback TCP proxy between ackdeck and a real redis-server that loses replies.

It forwards every request, counts the commands it sees (RESP arrays from the client), and for
the commands a rule picks it lets the server execute them but drops their reply and closes
the client's connection: the network blip after which a client cannot tell what happened.

    proxy = ReplyDropper(server.port); proxy.start()
    proxy.drop_next(lambda cmd: cmd[0] == b"EVALSHA")   # lose the next script's reply
    proxy.drop_every(7)                                  # lose every 7th command's reply
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

Rule = Callable[[list[bytes]], bool]
HANDSHAKE = {b"HELLO", b"CLIENT", b"AUTH", b"SELECT"}


def _parse(buf: bytes, at: int = 0) -> tuple[object, int] | None:
    """One RESP2 value from buf[at:]: (value, end) or None while incomplete. Arrays of
    bulk strings come back as lists of bytes (commands); replies are only skipped over."""
    nl = buf.find(b"\r\n", at)
    if nl < 0:
        return None
    kind, head = buf[at : at + 1], buf[at + 1 : nl]
    end = nl + 2
    if kind in (b"+", b"-", b":", b"_", b",", b"#", b"("):  # RESP2 and RESP3 simple types
        return head, end
    if kind in (b"$", b"=", b"!"):
        n = int(head)
        if n < 0:
            return None, end
        if len(buf) < end + n + 2:
            return None
        return buf[end : end + n], end + n + 2
    if kind in (b"*", b"~", b">", b"%", b"|"):
        n = int(head) * (2 if kind in (b"%", b"|") else 1)
        items: list[object] = []
        for _ in range(max(0, n)):
            got = _parse(buf, end)
            if got is None:
                return None
            item, end = got
            items.append(item)
        if kind == b"|":  # attributes precede the value they describe
            return _parse(buf, end)
        return items, end
    raise ValueError(f"not RESP: {buf[at : at + 20]!r}")


class ReplyDropper:
    def __init__(self, server_port: int) -> None:
        self.server_port = server_port
        self._listen = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listen.getsockname()[1])
        self._lock = threading.Lock()
        self._rules: list[tuple[Rule, int]] = []  # (rule, how many more replies to drop)
        self._every = 0
        self.commands = 0  # commands forwarded, on every connection
        self._room_commands = 0
        self.dropped: list[list[bytes]] = []  # the commands whose reply was lost
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def url(self, name: str) -> str:
        return f"redis://127.0.0.1:{self.port}/0/{name}"

    # ----- rules --------------------------------------------------------------------------
    def drop_next(self, rule: Rule, times: int = 1) -> None:
        with self._lock:
            self._rules.append((rule, times))

    def drop_every(self, n: int) -> None:
        """Lose the reply of every n-th command on a room's keys (0: none); the connection
        handshake (HELLO, CLIENT SETINFO, AUTH, SELECT) is spared, so a retry can get through."""
        with self._lock:
            self._every = n

    def _decide(self, cmd: list[bytes]) -> bool:
        with self._lock:
            self.commands += 1
            drop = False
            if self._every and cmd[0].upper() not in HANDSHAKE:
                self._room_commands += 1
                drop = self._room_commands % self._every == 0
            for i, (rule, left) in enumerate(self._rules):
                if not drop and rule(cmd):
                    drop = True
                    if left <= 1:
                        del self._rules[i]
                    else:
                        self._rules[i] = (rule, left - 1)
                    break
            if drop:
                self.dropped.append(cmd)
            return drop

    # ----- plumbing -------------------------------------------------------------------------
    def start(self) -> None:
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        self._listen.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listen.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.server_port))
            _Pair(self, client, server).start()


class _Pair:
    """One client connection: requests forwarded as they come; replies forwarded in order
    until the reply of a command chosen to be dropped, then both sockets are closed (the
    server has run the command; the client never learns its outcome)."""

    def __init__(self, proxy: ReplyDropper, client: socket.socket, server: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.server = server
        self.fates: list[bool] = []  # per forwarded command: drop its reply?
        self.cond = threading.Condition()
        self.closed = False

    def start(self) -> None:
        threading.Thread(target=self._requests, daemon=True).start()
        threading.Thread(target=self._replies, daemon=True).start()

    def _close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        for s in (self.client, self.server):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _requests(self) -> None:
        buf = b""
        try:
            while True:
                chunk = self.client.recv(1 << 16)
                if not chunk:
                    break
                buf += chunk
                at = 0
                while True:
                    got = _parse(buf, at)
                    if got is None:
                        break
                    cmd, end = got
                    assert isinstance(cmd, list)
                    fate = self.proxy._decide([bytes(x) for x in cmd])  # type: ignore[arg-type]
                    with self.cond:
                        self.fates.append(fate)
                        self.cond.notify_all()
                    self.server.sendall(buf[at:end])
                    at = end
                buf = buf[at:]
        except OSError:
            pass
        self._close()

    def _replies(self) -> None:
        buf = b""
        n = 0
        try:
            while True:
                chunk = self.server.recv(1 << 16)
                if not chunk:
                    break
                buf += chunk
                at = 0
                while True:
                    got = _parse(buf, at)
                    if got is None:
                        break
                    _, end = got
                    with self.cond:
                        while len(self.fates) <= n and not self.closed:
                            self.cond.wait(1)
                        if self.closed:
                            return
                        drop = self.fates[n]
                    n += 1
                    if drop:
                        self._close()  # the command ran; its reply is lost with the connection
                        return
                    self.client.sendall(buf[at:end])
                    at = end
                buf = buf[at:]
        except OSError:
            pass
        self._close()
