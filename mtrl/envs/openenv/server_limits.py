"""Bounds an OpenEnv server keeps against its clients, as ASGI middleware (no
openenv-core or Starlette import: they wrap any ASGI app, whatever the release).

  BodyLimit(app, max_bytes)        an HTTP request body over `max_bytes` is refused
                                   with 413 before it is read (a declared
                                   Content-Length) or as soon as the bytes read pass
                                   it (a chunked body): the server holds at most
                                   `max_bytes` of it plus one read
  IdleTimeout(app, timeout_s)      a WebSocket whose client sends nothing for
                                   `timeout_s` while the app waits for its next
                                   message is closed (1001), which ends its session;
                                   a send to a client that dropped its socket is
                                   dropped, and the app's next receive is the
                                   disconnect (1006): no traceback per lost client

The idle clock runs only while the app waits on the client: a step in progress (the
app is not receiving) never counts as idle, however long the sandbox takes. Frames
over a size are uvicorn's to refuse (`ws_max_size`, mtrl/serve_openenv.py).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[dict, Receive, Send], Awaitable[None]]

GONE_CODE = 1006  # "abnormal closure": the client went away without a close frame
IDLE_CLOSE_CODE = 1001  # "going away": the server ends the session


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """An HTTP request body over `max_bytes` gets 413 and is never buffered (module
    docstring); every other scope passes through."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: dict, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        too_large = f"the request body is over {self.max_bytes} bytes"
        lengths = [value for name, value in scope.get("headers", ())
                   if name.lower() == b"content-length"]
        try:
            declared = max((int(value) for value in lengths), default=0)
        except ValueError:
            return await _refuse(send, 400, "Content-Length is not a number")
        if declared > self.max_bytes:
            return await _refuse(send, 413, too_large)
        read, refused, started = 0, False, False

        async def counted_receive() -> Message:
            nonlocal read, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                if read > self.max_bytes:  # a chunked body: cut off here
                    refused = True
                    if not started:
                        await _refuse(send, 413, too_large)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:  # the app's own answer to a body it never got whole
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, counted_receive, guarded_send)


class IdleTimeout:
    """Closes a WebSocket whose client stays silent for `timeout_s` while the app
    waits for its next message (module docstring); other scopes pass through."""

    def __init__(self, app: ASGIApp, timeout_s: float):
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.app, self.timeout_s = app, float(timeout_s)

    async def __call__(self, scope: dict, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)
        closed = gone = False
        disconnect = {"type": "websocket.disconnect", "code": IDLE_CLOSE_CODE}

        async def timed_receive() -> Message:
            nonlocal closed
            if gone:  # a send found the client gone: the app hears it here, quietly
                return {"type": "websocket.disconnect", "code": GONE_CODE}
            if closed:
                return disconnect
            try:
                # Cancelling a pending receive loses no message (uvicorn's queues,
                # websockets' recv are cancellation-safe).
                return await asyncio.wait_for(receive(), self.timeout_s)
            except asyncio.TimeoutError:
                closed = True  # the app sees its client gone and ends the session
                return disconnect

        async def guarded_send(message: Message) -> None:
            nonlocal gone
            if closed or gone:  # the app's own farewell: the close below replaces it
                return
            try:
                await send(message)
            except OSError:
                # The client dropped its socket while the app answered it (uvicorn's
                # ClientDisconnected). Raised into the app, the framework's own error
                # reply would fail again and print a traceback per dropped client.
                gone = True

        try:
            await self.app(scope, timed_receive, guarded_send)
        finally:
            if closed and not gone:  # the session is gone before the client hears of it
                await send({"type": "websocket.close", "code": IDLE_CLOSE_CODE,
                            "reason": f"idle for {self.timeout_s:g} s"})
