"""The installed package's version, from its metadata (pyproject.toml is the one source).

Read only when asked (`ackdeck --version`, the MCP server's `serverInfo`): importlib.metadata
costs several milliseconds that the per-turn commands must not pay.
"""

from __future__ import annotations


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ackdeck")
    except PackageNotFoundError:  # imported from a checkout that was never installed
        return "0+unknown"
