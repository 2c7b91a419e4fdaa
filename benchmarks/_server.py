"""A fast OpenAI-compatible server for the benchmarks (127.0.0.1 only).

Run as its own process: ``python benchmarks/_server.py --latency 0.2``. It binds a
free port, prints ``PORT <n>`` on stdout, stops on SIGTERM, SIGINT or when its
stdin closes (its driver exited), and answers every
``POST .../chat/completions`` after ``latency`` seconds with a short text reply
and a usage block, and every ``POST .../responses`` (OpenAI's Responses API) with
the same reply as a Responses API response, built by the code
``swarmcore.testing.MockOpenAIServer`` answers with. One asyncio loop and a
minimal HTTP/1.1 keep-alive parser:
each request costs a few tens of microseconds, so hundreds of concurrent calls
wait on the latency, never on the server.

Side routes for the benchmark driver:

* ``POST /capture/on`` / ``POST /capture/off``: while on, the messages and tools
  of each chat request are kept, keyed by the first line of its system message
  (the agent's instructions), so the floor can send byte-identical payloads;
* ``GET /captured``: the kept payloads as JSON (and forget them);
* ``GET /stats``: requests served so far (and how many of them on the Responses API).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import threading
import time
from typing import Any

from swarmcore.testing import RecordedRequest, Reply

# The Responses API response MockOpenAIServer answers with: one shape for tests and benchmark.
from swarmcore.testing._replies import responses_body

REPLY_TEXT = "Done: the step is complete.\n<summary>step complete</summary>"
REPLY_MODEL = "gpt-4o-mini-2024-07-18"
"""The model a reply names, as OpenAI names a gpt-4o-mini reply: one litellm can price."""


class BenchServer:
    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.capturing = False
        self.captured: dict[str, dict[str, Any]] = {}
        self.served = 0
        self.served_responses = 0
        self._ids = 0
        self._completion_tokens = len(REPLY_TEXT) // 4
        self.writers: set[asyncio.StreamWriter] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.add(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                method, path, headers = _parse_head(head)
                body = await _read_body(reader, headers)
                status, payload = await self.route(method, path, body)
                keep_alive = headers.get("connection", "").lower() != "close"
                writer.write(_response(status, payload, keep_alive))
                await writer.drain()
                if not keep_alive:
                    return
        except (ConnectionError, asyncio.LimitOverrunError, ValueError):
            return
        finally:
            self.writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    def close_connections(self) -> None:
        """Close every open connection: each handler then sees EOF and returns."""
        for writer in list(self.writers):
            with contextlib.suppress(Exception):
                writer.close()

    async def route(self, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        if method == "POST" and path.rstrip("/").endswith("/chat/completions"):
            if self.capturing:
                self._capture(body)
            await asyncio.sleep(self.latency)
            self.served += 1
            return 200, self._completion(len(body))
        if method == "POST" and path.rstrip("/").endswith("/responses"):
            await asyncio.sleep(self.latency)
            self.served += 1
            self.served_responses += 1
            return 200, self._responses_reply(len(body))
        if path == "/capture/on":
            self.capturing = True
            return 200, b"{}"
        if path == "/capture/off":
            self.capturing = False
            return 200, b"{}"
        if path == "/captured":
            data, self.captured = self.captured, {}
            return 200, json.dumps(data).encode()
        if path == "/stats":
            stats = {
                "served": self.served,
                "served_responses": self.served_responses,
                "cpu_seconds": time.process_time(),
            }
            return 200, json.dumps(stats).encode()
        return 404, b'{"error": {"message": "no such route", "type": "invalid_request_error"}}'

    def _capture(self, body: bytes) -> None:
        data: dict[str, Any] = json.loads(body)
        messages: list[dict[str, Any]] = data.get("messages", [])
        system = next((m for m in messages if m.get("role") == "system"), None)
        content = str(system.get("content", "")) if system else ""
        key = content.split("\n", 1)[0]
        self.captured[key] = {"messages": messages, "tools": data.get("tools") or []}

    def _completion(self, body_bytes: int) -> bytes:
        self._ids += 1
        prompt = max(1, body_bytes // 4)  # no tokenizer: about four bytes a token
        completion = self._completion_tokens
        payload = {
            "id": f"chatcmpl-bench{self._ids}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": REPLY_MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": REPLY_TEXT},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
        return json.dumps(payload, separators=(",", ":")).encode()

    def _responses_reply(self, body_bytes: int) -> bytes:
        """The same reply as ``_completion``'s, as a Responses API response."""
        prompt = max(1, body_bytes // 4)
        reply = Reply(
            text=REPLY_TEXT,
            model=REPLY_MODEL,
            prompt_tokens=prompt,
            completion_tokens=self._completion_tokens,
        )
        payload = responses_body(RecordedRequest(model=REPLY_MODEL, messages=[]), reply)
        return json.dumps(payload, separators=(",", ":")).encode()


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return method, target.split("?", 1)[0], headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")  # no trailers expected
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
    length = int(headers.get("content-length") or 0)
    return await reader.readexactly(length) if length else b""


def _response(status: int, payload: bytes, keep_alive: bool) -> bytes:
    reason = {200: "OK", 404: "Not Found"}.get(status, "Error")
    connection = "keep-alive" if keep_alive else "close"
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: {connection}\r\n\r\n"
    )
    return head.encode() + payload


async def serve(latency: float) -> None:
    server = BenchServer(latency)
    # A deep backlog: a burst of 500+ connects must not overflow the accept queue.
    listener = await asyncio.start_server(
        server.handle, "127.0.0.1", 0, backlog=4096, limit=1 << 22
    )
    port = listener.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # The driver holds our stdin: when it goes away, however it died, so do we.
    threading.Thread(
        target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(stop.set)), daemon=True
    ).start()
    async with listener:
        await stop.wait()
        listener.close()
        server.close_connections()
        await asyncio.sleep(0.05)  # let the handlers see EOF and return


def main() -> None:
    parser = argparse.ArgumentParser(description="A fast OpenAI-compatible benchmark server.")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds before each reply")
    args = parser.parse_args()
    asyncio.run(serve(args.latency))


if __name__ == "__main__":
    main()
