"""IdleTimeout at the ASGI boundary, without a server: a client that drops its socket
while the app answers it ends the session quietly."""

import asyncio

from mtrl.envs.openenv.server_limits import GONE_CODE, IdleTimeout


class ClientGone(OSError):
    """What uvicorn raises from send once the socket is gone (ClientDisconnected)."""


def test_a_send_to_a_dropped_client_is_dropped_and_the_app_hears_the_disconnect():
    seen = []

    async def app(scope, receive, send):
        await send({"type": "websocket.send", "text": "answer"})  # the client is gone
        await send({"type": "websocket.send", "text": "error reply"})  # must not raise
        seen.append(await receive())

    sent = []

    async def send(message):
        sent.append(message)
        raise ClientGone("socket closed")

    async def receive():
        raise AssertionError("the app must hear the disconnect without reading the socket")

    asyncio.run(IdleTimeout(app, timeout_s=5.0)({"type": "websocket"}, receive, send))
    assert seen == [{"type": "websocket.disconnect", "code": GONE_CODE}]
    assert [m["text"] for m in sent] == ["answer"]  # nothing after the failed send, no close


def test_an_honest_session_is_passed_through():
    messages = [{"type": "websocket.receive", "text": "reset"}]
    sent = []

    async def app(scope, receive, send):
        message = await receive()
        await send({"type": "websocket.send", "text": "echo " + message["text"]})

    async def send(message):
        sent.append(message)

    async def receive():
        return messages.pop(0)

    asyncio.run(IdleTimeout(app, timeout_s=5.0)({"type": "websocket"}, receive, send))
    assert sent == [{"type": "websocket.send", "text": "echo reset"}]
