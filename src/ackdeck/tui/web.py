"""`ackdeck web`: the same dashboard in a browser, through textual-serve.

textual-serve starts one dashboard process per browser tab (`ackdeck tui` with the same
options) and relays the terminal over a websocket. It binds to loopback unless told otherwise:
the dashboard acts as the owner (reads, acks, pushes), so exposing it is a decision, not a
default; put it behind SSH forwarding (docs/how-to/web-dashboard.md) to watch from another machine.
"""

from __future__ import annotations

import errno
import html
import os
import shlex
import socket
import sys
from collections.abc import Callable, Sequence

from ackdeck.core.base.hostcheck import LOOPBACK, refusal

METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus text exposition
__all__ = ["LOOPBACK", "refusal", "serve", "start_message", "tui_command"]


# The terminal takes keys once the page has loaded: without focus the dashboard looked dead
# (keys ignored, footer blank) until the owner clicked it. textual-serve creates the terminal
# (xterm's textarea) on load; focus it as soon as it exists. The app itself starts blurred
# (Textual's web driver says so at start) and textual-serve tells it about focus only when
# the terminal's screen element is focused, which a click does; a blurred Textual app never
# draws its footer's keys. So once the app has drawn (textual-serve marks the body
# `-first-byte`), tell it it has the focus, as that click would.
FOCUS_ON_LOAD = """<script>
window.addEventListener("load", () => {
  const focus = () => {
    const input = document.querySelector(".textual-terminal textarea");
    if (input === null) return false;
    input.focus({ preventScroll: true });
    return true;
  };
  const tell = () => {
    const screen = document.querySelector(".textual-terminal .xterm-screen");
    if (screen === null || !document.body.classList.contains("-first-byte")) return false;
    screen.dispatchEvent(new FocusEvent("focus"));
    return true;
  };
  let focused = focus();
  let told = focused && tell();
  if (!told) {
    const seen = new MutationObserver(() => {
      focused = focused || focus();
      told = focused && tell();
      if (told) seen.disconnect();
    });
    const what = { childList: true, subtree: true, attributes: true, attributeFilter: ["class"] };
    seen.observe(document.body, what);
  }
});
</script>"""


def page_title(machine: str) -> str:
    return f"ackdeck · {machine}"


def with_title_and_focus(page: str, machine: str) -> str:
    """textual-serve's page with a `<title>` naming ackdeck and the machine, and the script
    that focuses the terminal on load. Pure, so it is tested on its own."""
    head = f"<title>{html.escape(page_title(machine))}</title>{FOCUS_ON_LOAD}"
    return page.replace("<head>", "<head>" + head, 1)


def tui_command(tui_args: Sequence[str]) -> str:
    """The shell command textual-serve runs per browser session: this Python's `ackdeck tui`."""
    return shlex.join([sys.executable, "-m", "ackdeck.core.cli", "tui", *tui_args])


def start_message(host: str, port: int) -> str:
    where = f"http://{host}:{port}" if ":" not in host else f"http://[{host}]:{port}"
    if host in LOOPBACK:
        scope = "loopback only: this machine can open it (forward its port over SSH to watch)"
    else:
        scope = f"listening on {host}: anyone who can reach it acts as the owner"
    return f"ackdeck web: serving the dashboard on {where} ({scope})"


def serve(
    host: str,
    port: int,
    tui_args: Sequence[str],
    metrics: Callable[[], bytes] | None = None,
) -> int:
    """Serve the dashboard; with `metrics`, also its Prometheus text at `/metrics`."""
    import asyncio

    from aiohttp import web
    from textual_serve.server import Server

    loopback = host in LOOPBACK

    def check(request: web.Request, *, websocket: bool) -> None:
        why = refusal(
            request.host, request.headers.get("Origin"), loopback=loopback, websocket=websocket
        )
        if why is not None:
            print(f"ackdeck web: refused a request: {why}", file=sys.stderr, flush=True)
            raise web.HTTPForbidden(text=f"ackdeck web: {why}\n")

    class DashboardServer(Server):
        async def handle_index(self, request: web.Request) -> web.StreamResponse:
            check(request, websocket=False)
            # The page's script and websocket URLs name the address the browser used (an SSH
            # forward to another local port, the machine's name from a phone), not the bound
            # one (0.0.0.0 is no address a browser can reach). No await between this and the
            # page's rendering, so concurrent requests cannot mix their URLs.
            self.public_url = f"{request.scheme}://{request.host}"
            response = await super().handle_index(request)
            if isinstance(response, web.Response) and response.text is not None:
                response.text = with_title_and_focus(response.text, socket.gethostname())
            return response

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            check(request, websocket=True)
            return await super().handle_websocket(request)

        async def handle_metrics(self, request: web.Request) -> web.Response:
            check(request, websocket=False)  # the page's checks: no rebinding name reads it
            assert metrics is not None
            body = await asyncio.get_running_loop().run_in_executor(None, metrics)
            return web.Response(body=body, headers={"Content-Type": METRICS_TYPE})

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            if metrics is not None:
                app.router.add_get("/metrics", self.handle_metrics, name="metrics")
            return app

    # Say "serving" only if it can: a port already taken is one line, before any banner.
    if not 0 <= port <= 65535:  # bind() raises OverflowError (a traceback) for these
        raise OSError(errno.EINVAL, f"cannot serve on {host} port {port}: ports are 0-65535")
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.create_server((host, port), family=family) as probe:
            # --port 0: serve on the free port the system picked, and print that one (the
            # URL said ":0", which no browser opens).
            port = probe.getsockname()[1]
    except OSError as exc:
        # A name that does not resolve is a gaierror: errno -2, which os.strerror calls
        # "Unknown error -2"; its own strerror says "Name or service not known".
        if exc.errno is not None and exc.errno > 0:
            why = os.strerror(exc.errno)
        else:
            why = exc.strerror or str(exc)
        raise OSError(exc.errno, f"cannot serve on {host} port {port}: {why}") from None
    print(start_message(host, port), file=sys.stderr, flush=True)
    server = DashboardServer(tui_command(tui_args), host=host, port=port, title="ackdeck")
    server.serve()
    return 0
