"""A local OpenAI-compatible HTTP server for integration tests: real HTTP, on 127.0.0.1 only."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

from swarmcore.testing._replies import (
    Fail,
    RecordedRequest,
    Reply,
    Step,
    chat_messages_of,
    chat_tools_of,
    completion_body,
    error_object,
    responses_body,
    responses_events,
    stream_chunks,
)

ServerResponder = Callable[[RecordedRequest], "Step | str"]


class MockOpenAIServer:
    """Serves ``POST /v1/chat/completions`` and ``POST /v1/responses`` from a script.

    Every request is recorded. A Responses API request is recorded as chat
    messages too (``RecordedRequest``), so the same steps and checks serve both
    APIs; its raw body (``raw_bodies``) keeps what only it carries, such as the
    reasoning items a client hands back. A ``Reply``'s ``encrypted_reasoning``
    and ``incomplete`` shape a Responses reply only.

    It binds a free port on 127.0.0.1 and runs in a background thread. Replies
    can carry text, tool calls and response headers; a ``Fail`` answers with its
    HTTP status and headers (and, with ``echo_credential=True``, quotes the key
    the request carried in its message, as some providers do); a request with
    ``"stream": true`` gets server-sent events. ``LiteLLMProxy`` makes the steps
    a LiteLLM Proxy answers with: its error bodies and headers, its cost header.

    ```python
    with MockOpenAIServer([Reply(text="hi")]) as server:
        agent = Agent("a", "...", **server.model_kwargs)
        await agent.run("task")
        assert server.requests[0].messages[-1]["content"] == "task"
    ```

    Args:
        script: Steps (``Reply``, ``Fail`` or text) answered in order.
        responder: Called when the script is empty; returns a step or text.
            Without one, a request past the script's end gets a 400 error.
    """

    __test__ = False  # not a pytest test class, whatever name it is imported under

    def __init__(
        self, script: Iterable[Step | str] = (), *, responder: ServerResponder | None = None
    ) -> None:
        self._script: list[Step] = []
        self.add(*script)
        self._responder = responder
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[RecordedRequest] = []
        """Every chat request received, in arrival order."""
        self.raw_bodies: list[dict[str, Any]] = []
        """Every request body as JSON, in arrival order."""
        self.headers: list[dict[str, str]] = []
        """Every request's headers (names lower-cased), in arrival order."""
        self.paths: list[str] = []
        """Every request's path (``/v1/chat/completions``, ``/v1/responses``), in arrival order."""
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def add(self, *steps: Step | str) -> None:
        """Append steps to the script."""
        self._script.extend(Reply(text=s) if isinstance(s, str) else s for s in steps)

    @property
    def url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:PORT/v1``."""
        if self._httpd is None:
            raise RuntimeError("MockOpenAIServer is not running; use it as a context manager.")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def model_kwargs(self) -> dict[str, str]:
        """``Agent`` keyword arguments that point an agent at this server."""
        return {"model": "openai/test-model", "api_base": self.url, "api_key": "sk-test-local"}

    def start(self) -> Self:
        """Bind a free port on 127.0.0.1 and serve in a background thread."""
        self._stopping.clear()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        # A short poll: shutdown() waits for the loop to look, 0.5 s by default per stop.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port; a reply still waiting out its delay ends now."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _next(
        self, request: RecordedRequest, body: dict[str, Any], headers: dict[str, str], path: str
    ) -> Step:
        with self._lock:
            self.requests.append(request)
            self.raw_bodies.append(body)
            self.headers.append(headers)
            self.paths.append(path)
            if self._script:
                return self._script.pop(0)
        if self._responder is not None:
            answer = self._responder(request)
            return Reply(text=answer) if isinstance(answer, str) else answer
        return Fail(
            400, f"MockOpenAIServer: request {len(self.requests)} is past the end of its script."
        )


def _handler_for(server: MockOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output quiet."""

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body: dict[str, Any] = json.loads(self.rfile.read(length) or b"{}")
            responses = _is_responses(self.path)
            if responses is None:
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            request = _recorded(body, responses=responses)
            headers = {k.lower(): v for k, v in self.headers.items()}
            path = urlsplit(self.path).path
            step = server._next(request, body, headers, path)  # pyright: ignore[reportPrivateUsage] -- the server's own handler
            if step.delay:
                server._stopping.wait(step.delay)  # pyright: ignore[reportPrivateUsage] -- the server's own handler
            if isinstance(step, Fail):
                error = _error(step, self.headers)
                self._send_json(step.status_code, {"error": error}, step.headers)
            elif body.get("stream"):
                self._send_stream(_stream(request, step.for_request(request), body, responses))
            else:
                reply = step.for_request(request)
                answer = _answer(request, reply, body, responses=responses)
                self._send_json(200, answer, reply.headers)

        def _send_json(
            self, status: int, payload: object, headers: Mapping[str, str] | None = None
        ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _send_stream(self, stream: tuple[Reply, Iterator[bytes]]) -> None:
            reply, events = stream
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            for event in events:
                self.wfile.write(event)
                self.wfile.flush()
            self.close_connection = True

    return Handler


def _is_responses(path: str) -> bool | None:
    """Whether ``path`` is the Responses API's route (False: chat completions'; None: neither).

    The query is not part of the route: Azure sends ``?api-version=...``.
    """
    route = urlsplit(path).path.rstrip("/")
    if route.endswith("/responses"):
        return True
    return False if route.endswith("/chat/completions") else None


def _stream(
    request: RecordedRequest, reply: Reply, body: dict[str, Any], responses: bool
) -> tuple[Reply, Iterator[bytes]]:
    """The reply as server-sent events: chat-completion chunks, or the Responses API's events."""
    text = reply.text or ""
    pieces = (text[start : start + 8] for start in range(0, len(text), 8))
    if responses:
        events = responses_events(request, reply, pieces, body)
        return reply, (f"event: {k}\ndata: {json.dumps(d)}\n\n".encode() for k, d in events)
    options: dict[str, Any] = body.get("stream_options") or {}
    chunks = stream_chunks(request, reply, pieces, include_usage=bool(options.get("include_usage")))
    lines = (f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks)
    return reply, itertools.chain(lines, [b"data: [DONE]\n\n"])


def _answer(
    request: RecordedRequest, reply: Reply, body: dict[str, Any], *, responses: bool
) -> dict[str, Any]:
    """The reply's JSON body in the API the request (whose body is ``body``) used."""
    return responses_body(request, reply, body) if responses else completion_body(request, reply)


def _recorded(body: dict[str, Any], *, responses: bool) -> RecordedRequest:
    """A request as the script's steps read it: a Responses one as chat messages and tools."""
    if responses:
        shown = ("model", "input", "instructions", "tools")
        messages, tools = chat_messages_of(body), chat_tools_of(body)
    else:
        shown = ("model", "messages", "tools")
        messages, tools = list(body.get("messages", [])), list(body.get("tools", []) or [])
    return RecordedRequest(
        model=str(body.get("model", "")),
        messages=messages,
        tools=tools,
        params={k: v for k, v in body.items() if k not in shown},
    )


def _error(step: Fail, headers: Message) -> Mapping[str, Any]:
    """A failure's ``error`` object, quoting the request's key when the step says to."""
    if step.error is None and step.echo_credential:
        return error_object(step, step.message.replace("{credential}", _credential(headers)))
    return error_object(step)


def _credential(headers: Message) -> str:
    """The key a request carried: OpenAI's bearer token, Azure's or Anthropic's key header."""
    bearer = headers.get("Authorization") or ""
    if bearer.lower().startswith("bearer "):
        return bearer[len("bearer ") :]
    return headers.get("api-key") or headers.get("x-api-key") or bearer
