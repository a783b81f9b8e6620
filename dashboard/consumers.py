"""The live websocket: logged-in browsers receive typed events published by ingest and alerts."""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from core.live import LIVE_GROUP


class LiveConsumer(AsyncJsonWebsocketConsumer):
    """Joins the live group; anonymous users are refused (close code 4401)."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        await self.channel_layer.group_add(LIVE_GROUP, self.channel_name)
        await self.accept()
        await self.send_json({"type": "hello", "user": user.get_username()})

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(LIVE_GROUP, self.channel_name)

    async def live_event(self, message: dict[str, Any]) -> None:
        """Forward a published event as is (it is already a small typed payload)."""
        await self.send_json(message["event"])
