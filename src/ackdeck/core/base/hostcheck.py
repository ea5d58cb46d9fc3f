"""Which HTTP requests a loopback server answers: the dashboard page (`ackdeck web`) and the
metrics endpoint (`/metrics`, `ackdeck metrics --serve`) share these checks."""

from __future__ import annotations

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def _hostname(authority: str) -> str:
    """`host` of `host[:port]` or `[v6]:port`, lower-cased."""
    if authority.startswith("["):
        return authority[1 : authority.find("]")].lower()
    return authority.rsplit(":", 1)[0].lower() if authority.count(":") == 1 else authority.lower()


def refusal(host: str, origin: str | None, *, loopback: bool, websocket: bool) -> str | None:
    """Why a request must be refused (None: serve it). Pure, so every case is tested.

    Binding to loopback does not keep other sites out: any page open in the owner's browser
    may open a websocket to 127.0.0.1, and a DNS-rebinding name can even load the page. The
    websocket drives the owner's keys (ack all, yes), so it is accepted only from a page this
    server served at the address the browser used (Origin equals Host), and a loopback-only
    server answers only to loopback names."""
    if loopback and _hostname(host) not in LOOPBACK:
        return f"host {host!r} is not a loopback address"
    if websocket:
        if origin is None:
            return "no Origin header"
        if origin.split("://", 1)[-1].rstrip("/").lower() != host.lower():
            return f"origin {origin!r} is not this server ({host!r})"
    return None
