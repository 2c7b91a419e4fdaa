"""A stdio transport that can end a busy server at once.

The SDK's stdio client follows the spec's shutdown (close stdin, wait two
seconds, then terminate) and takes no shorter wait. That suits an idle server,
but one still running a call that was cancelled or timed out never reads its
stdin's end, so a cancelled run would wait those seconds. This transport has
the SDK's shape (an async context manager of a read and a write stream) over a
process it owns, so a connection can tell it to terminate the process when the
server's calls were abandoned.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any

_GRACE = 2.0
"""Seconds an idle server has to exit once its stdin closes (the SDK's figure)."""
_KILL_AFTER = 2.0
"""Seconds from terminating the server to killing it."""


class StdioTransport:
    """The server as a subprocess spoken to over its stdin and stdout.

    Args:
        params: The SDK's ``StdioServerParameters``.
    """

    def __init__(self, params: Any) -> None:
        self._params = params
        self._urgent = False
        self._context: AbstractAsyncContextManager[Any] | None = None

    def abandon(self) -> None:
        """Terminate the server when the transport closes, without the idle grace period."""
        self._urgent = True

    async def __aenter__(self) -> Any:
        self._context = self._streams()
        return await self._context.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        assert self._context is not None
        return await self._context.__aexit__(*exc)

    @asynccontextmanager
    async def _streams(self) -> AsyncGenerator[Any]:
        import anyio
        from mcp.client.stdio import get_default_environment
        from mcp.shared.message import SessionMessage

        params = self._params
        process: Any = await anyio.open_process(
            [params.command, *params.args],
            env=get_default_environment() | (params.env or {}),
            cwd=params.cwd,
            stderr=None,  # the server's stderr stays ours, as with the SDK's client
            start_new_session=True,  # its own process group, ended as one
        )
        read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
        closed = (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)

        async def read() -> None:
            from anyio.streams.text import TextReceiveStream

            text = TextReceiveStream(
                process.stdout, encoding=params.encoding, errors=params.encoding_error_handler
            )
            with suppress(*closed):
                async with read_in:
                    buffer = ""
                    async for chunk in text:
                        *lines, buffer = (buffer + chunk).split("\n")
                        for line in lines:
                            if line.strip():
                                await read_in.send(_parse(line))

        async def write() -> None:
            with suppress(*closed):
                async with write_out:
                    async for message in write_out:
                        data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        line = (data + "\n").encode(
                            params.encoding, errors=params.encoding_error_handler
                        )
                        await process.stdin.send(line)
            await read_in.aclose()  # the server is gone: let the session see the end

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            tasks.start_soon(write)
            try:
                yield read_out, write_in
            finally:
                with anyio.CancelScope(shield=True):  # the process must end, cancelled or not
                    await _stop(process, urgent=self._urgent)
                    for stream in (read_out, write_in):
                        await stream.aclose()
                tasks.cancel_scope.cancel()


def _parse(line: str) -> Any:
    import mcp_types
    from mcp.shared.message import SessionMessage

    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # the session reports it
        return exc


async def _stop(process: Any, *, urgent: bool) -> None:
    """End the server: close its stdin, give an idle one its grace, terminate, then kill."""
    with suppress(Exception):
        await process.stdin.aclose()
    if urgent or not await _exited(process, _GRACE):
        _signal(process, signal.SIGTERM)
        if not await _exited(process, _KILL_AFTER):
            _signal(process, signal.SIGKILL if sys.platform != "win32" else signal.SIGTERM)
            await _exited(process, _KILL_AFTER)
    with suppress(Exception):
        await process.stdout.aclose()


def _signal(process: Any, number: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        if sys.platform == "win32":  # pragma: no cover - no process groups there
            process.terminate()
        else:
            os.killpg(process.pid, number)  # the group: servers started by npx/uvx included


async def _exited(process: Any, within: float) -> bool:
    """Whether the process ended within ``within`` seconds (its return code, polled)."""
    import anyio

    with anyio.move_on_after(within):
        # Polled, not process.wait(): that also waits for the pipes' end, which a child
        # of the server holding them open would delay (as the SDK notes).
        while process.returncode is None:  # noqa: ASYNC110
            await anyio.sleep(0.01)
    return process.returncode is not None
