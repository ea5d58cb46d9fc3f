"""What an SDK client that opts in to ackdeck's channel notices receives, recorded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.client.extension import ClientExtension, NotificationBinding
from pydantic import BaseModel, ConfigDict

from tests.helpers.wait import eventually_async

QUIET = 2.0  # a quiet period observed after the notice (4x the coalescing window)


class ChannelParams(BaseModel):
    model_config = ConfigDict(extra="allow")
    content: str
    meta: dict[str, str]


@dataclass
class Recorder:
    channel: list[ChannelParams] = field(default_factory=list)
    other: list[Any] = field(default_factory=list)

    async def on_channel(self, params: ChannelParams) -> None:
        self.channel.append(params)

    async def on_message(self, message: Any) -> None:
        self.other.append(message)

    async def wait_for(self, n: int) -> None:
        await eventually_async(lambda: len(self.channel) >= n, what=f"{n} channel notifications")

    async def quiet(self, seconds: float = QUIET) -> None:
        await anyio.sleep(seconds)


class ChannelListener(ClientExtension):
    """How an SDK client opts in to a vendor notification: a binding for its method."""

    identifier = "dev.ackdeck/channel-listener"

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        return [
            NotificationBinding(
                method="notifications/claude/channel",
                params_type=ChannelParams,
                handler=self.recorder.on_channel,
            )
        ]
