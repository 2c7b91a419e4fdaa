"""The local servers against hostile pages and clients: forged Host and Origin, odd tokens, floods.

The run viewer (``swarmcore ui``) and the A2A server (``swarmcore serve --a2a``)
each run under uvicorn on 127.0.0.1 and are sent what a hostile web page (DNS
rebinding, cross-origin POSTs) or client (non-ASCII credentials, huge bodies,
many open streams) would send. Each case is a row named for it.
"""

from __future__ import annotations

import asyncio
import re
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from swarmcore import Agent, Swarm
from swarmcore._ui.app import create_app
from swarmcore.errors import StoreError, UserError
from swarmcore.results import AgentFailure
from swarmcore.store import RunRecord, SQLiteStore
from swarmcore.testing import FunctionModel, TemporaryPostgres
from tests.serving import serve, serving_command

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

TOKEN = "a-long-random-token-for-hostile-tests"
A2A_TOKEN = "another-long-random-token-for-a2a"
V1 = {"A2A-Version": "1.0"}
CARD = "/.well-known/agent-card.json"
DEADLINE = 60.0


@dataclass(frozen=True)
class Servers:
    """Both servers, each on its own loopback port."""

    viewer: str
    a2a: str
    run_id: str
    """A finished run the viewer shows."""
    csrf: str
    """The viewer's CSRF token, read from that run's page."""


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _stored_run(path: Path) -> str:
    model = FunctionModel(lambda request: "fine")
    swarm = Swarm(Agent("one", "One. Answer.", model=model.model), store=path)
    return swarm.run_sync("a stored task").run_id


def _send_message(text: str = "hello") -> dict[str, Any]:
    message = {
        "messageId": f"m-{time.monotonic_ns()}",
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


def _echo_swarm(store: Path | None = None) -> tuple[Swarm, FunctionModel]:
    model = FunctionModel(lambda request: "echoed")
    return Swarm(Agent("echo", "Echo. Answer.", model=model.model), store=store), model


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    path = tmp_path_factory.mktemp("hosts") / "runs.db"
    run_id = _stored_run(path)
    store = SQLiteStore(path)
    swarm, _model = _echo_swarm()
    viewer_app = create_app(
        store, store_path=path, allow_actions=True, allowed_hosts=["viewer.lan"]
    )
    a2a_app = swarm.to_a2a(allowed_hosts=["agents.lan"])
    with ExitStack() as stack:
        viewer = stack.enter_context(serve(viewer_app))
        a2a = stack.enter_context(serve(a2a_app))
        page = httpx.get(f"{viewer}/runs/{run_id}").text
        csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        yield Servers(viewer, a2a, run_id, csrf)
    store.close()


def _url(servers: Servers, which: str) -> str:
    return servers.viewer if which == "viewer" else servers.a2a


# --- Host: only the names a server was bound for ----------------------------------------------

ANSWERED = [
    pytest.param("127.0.0.1:{port}", id="loopback-address"),
    pytest.param("localhost:{port}", id="localhost"),
    pytest.param("[::1]:{port}", id="ipv6-loopback"),
    pytest.param("LocalHost:{port}", id="localhost-any-case"),
    pytest.param("localhost.:{port}", id="localhost-trailing-dot"),
    pytest.param("127.0.0.1", id="no-port"),
    pytest.param("{named}:{port}", id="a-name-given-explicitly"),
]
REFUSED = [
    pytest.param("evil.example", id="rebound-name"),
    pytest.param("evil.example:{port}", id="rebound-name-with-port"),
    pytest.param("127.0.0.1.evil.example:{port}", id="loopback-address-as-a-subdomain"),
    pytest.param("localhost.evil.example:{port}", id="localhost-as-a-subdomain"),
    pytest.param("127.0.0.2:{port}", id="another-loopback-address"),
    pytest.param("0.0.0.0:{port}", id="the-any-address"),
    pytest.param("", id="empty-host"),
    pytest.param("evil.example@127.0.0.1:{port}", id="userinfo-trick"),
    pytest.param("127.0.0.1:{port}:80", id="two-ports"),
    pytest.param("127.0.0.1:http", id="a-port-that-is-no-number"),
    pytest.param("::1", id="ipv6-without-brackets"),
    pytest.param("[::1", id="unclosed-bracket"),
    pytest.param("{named}.evil.example", id="a-given-name-as-a-subdomain"),
]
SERVERS = [pytest.param("viewer", id="viewer"), pytest.param("a2a", id="a2a")]
NAMED = {"viewer": "viewer.lan", "a2a": "agents.lan"}


@pytest.mark.parametrize("which", SERVERS)
@pytest.mark.parametrize("host", ANSWERED)
def test_a_host_the_server_was_bound_for_is_answered(
    servers: Servers, which: str, host: str
) -> None:
    url = _url(servers, which)
    host = host.format(port=_port(url), named=NAMED[which])
    path = "/" if which == "viewer" else CARD
    response = httpx.get(f"{url}{path}", headers={"Host": host})
    assert response.status_code == 200, response.text
    if which == "a2a":  # the card names the host it was asked on, one of ours
        interfaces = response.json()["supportedInterfaces"]
        assert {i["url"] for i in interfaces} == {f"http://{host}/"}


@pytest.mark.parametrize("which", SERVERS)
@pytest.mark.parametrize("host", REFUSED)
def test_a_host_it_was_not_bound_for_is_refused_whatever_the_path(
    servers: Servers, which: str, host: str
) -> None:
    url = _url(servers, which)
    host = host.format(port=_port(url), named=NAMED[which])
    paths = ["/", f"/runs/{servers.run_id}", "/static/ui.css"] if which == "viewer" else [CARD, "/"]
    for path in paths:
        response = httpx.get(f"{url}{path}", headers={"Host": host})
        assert response.status_code == 421, (path, response.status_code, response.text)
        said = response.text
        assert "127.0.0.1, localhost, [::1]" in said, said
        assert "--allowed-host" in said, said
        assert "location" not in response.headers
        assert servers.run_id not in said
        assert "supportedInterfaces" not in said


def test_a2a_answers_the_host_of_its_card_url_and_names_that_url() -> None:
    swarm, _model = _echo_swarm()
    with serve(swarm.to_a2a(url="https://agents.example/writers/")) as url:
        card = httpx.get(f"{url}{CARD}", headers={"Host": "agents.example"})
        assert card.status_code == 200
        assert {i["url"] for i in card.json()["supportedInterfaces"]} == {
            "https://agents.example/writers/"
        }
        assert httpx.get(f"{url}{CARD}", headers={"Host": "evil.example"}).status_code == 421


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param("http://viewer.lan", id="a-url"),
        pytest.param("viewer.lan:8484", id="a-port"),
        pytest.param("viewer.lan/runs", id="a-path"),
        pytest.param("*", id="a-wildcard"),
        pytest.param("", id="empty"),
    ],
)
def test_an_allowed_host_that_is_no_host_name_is_refused_with_a_fix(entry: str) -> None:
    store_path = Path("unused.db")
    with pytest.raises(UserError, match="allowed_hosts holds"):
        create_app(_NoRuns(), store_path=store_path, allowed_hosts=[entry])
    swarm, _model = _echo_swarm()
    with pytest.raises(UserError, match="allowed_hosts holds"):
        swarm.to_a2a(allowed_hosts=[entry])


class _NoRuns:
    """A reader with no runs (the app is only built, never served)."""

    def get_run(self, run_id: str) -> RunRecord | None:
        return None

    def read_runs(self, **_: Any) -> Any:
        raise AssertionError("not read")

    def count_runs(self, **_: Any) -> int:
        return 0

    def close(self) -> None:
        pass


@pytest.mark.parametrize("which", SERVERS)
def test_a_request_without_a_host_header_is_refused(servers: Servers, which: str) -> None:
    url = _url(servers, which)
    with socket.create_connection(("127.0.0.1", _port(url)), timeout=30) as raw:
        raw.sendall(f"GET {CARD if which == 'a2a' else '/'} HTTP/1.0\r\n\r\n".encode())
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    status = answer.split(b"\r\n", 1)[0]
    assert b" 421 " in status, answer[:300]
    assert b"no Host header" in answer


# --- Origin: a change comes from the server's own origin -------------------------------------

ORIGINS = [
    pytest.param("http://{here}", True, id="same-origin"),
    pytest.param(None, True, id="no-origin-a-client-not-a-browser"),
    pytest.param("https://{named}", True, id="a-proxy-name-given-explicitly"),
    pytest.param("http://evil.example", False, id="another-site"),
    pytest.param("http://evil.example:{port}", False, id="another-site-same-port"),
    pytest.param("http://127.0.0.1:1", False, id="another-local-port"),
    pytest.param("http://localhost:{port}", False, id="localhost-is-another-origin-than-127"),
    pytest.param("null", False, id="opaque-null-origin"),
    pytest.param("http://[::1", False, id="malformed-origin"),
    pytest.param("file://", False, id="a-file-page"),
]


def _post(servers: Servers, which: str, origin: str | None, host: str | None = None) -> Any:
    url = _url(servers, which)
    headers: dict[str, str] = {} if origin is None else {"Origin": origin}
    if host is not None:
        headers["Host"] = host
    if which == "viewer":
        # An action the viewer has not: past every guard it is a 400 "Cannot ..." page.
        form = {"csrf": servers.csrf}
        return httpx.post(f"{url}/runs/{servers.run_id}/nothing", data=form, headers=headers)
    return httpx.post(f"{url}/", json=_send_message(), headers={**headers, **V1}, timeout=60)


@pytest.mark.parametrize("which", SERVERS)
@pytest.mark.parametrize(("origin", "taken"), ORIGINS)
def test_a_change_from_another_origin_is_refused(
    servers: Servers, which: str, origin: str | None, taken: bool
) -> None:
    url = _url(servers, which)
    here = url.removeprefix("http://")
    if origin is not None:
        origin = origin.format(here=here, port=_port(url), named=NAMED[which])
    response = _post(servers, which, origin)
    if taken:
        expected = 400 if which == "viewer" else 200
        assert response.status_code == expected, response.text
        assert (
            ("Cannot nothing" in response.text)
            if which == "viewer"
            else "result" in response.json()
        )
    else:
        assert response.status_code == 403, response.text
        assert "another origin" in response.text


@pytest.mark.parametrize("which", SERVERS)
def test_a_rebound_page_posting_to_its_own_origin_is_refused_by_host(
    servers: Servers, which: str
) -> None:
    port = _port(_url(servers, which))
    response = _post(servers, which, f"http://evil.example:{port}", host=f"evil.example:{port}")
    assert response.status_code == 421, response.text


def test_the_viewer_deletes_nothing_for_a_rebound_page(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    run_id = _stored_run(path)
    store = SQLiteStore(path)
    try:
        with serve(create_app(store, store_path=path, allow_actions=True)) as url:
            port = _port(url)
            forged = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
            page = httpx.get(f"{url}/runs/{run_id}", headers={"Host": forged["Host"]})
            assert page.status_code == 421
            assert 'name="csrf"' not in page.text
            real = httpx.get(f"{url}/runs/{run_id}").text
            csrf = real.split('name="csrf" value="', 1)[1].split('"', 1)[0]
            for headers in (forged, {"Origin": f"http://evil.example:{port}"}):
                refused = httpx.post(
                    f"{url}/runs/{run_id}/delete", data={"csrf": csrf}, headers=headers
                )
                assert refused.status_code in (403, 421), refused.text
            assert store.get_run(run_id) is not None
    finally:
        store.close()


# --- Credentials that are not ASCII: a wrong token, never a crash ------------------------------


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    path = tmp_path_factory.mktemp("guarded") / "runs.db"
    _stored_run(path)
    store = SQLiteStore(path)
    swarm, _model = _echo_swarm()
    with ExitStack() as stack:
        viewer = stack.enter_context(serve(create_app(store, token=TOKEN, allow_actions=True)))
        a2a = stack.enter_context(serve(swarm.to_a2a(token=A2A_TOKEN)))
        yield viewer, a2a
    store.close()


NON_ASCII = [
    pytest.param(
        "viewer", {"Authorization": "Bearer ünïcode".encode()}, "", id="viewer-bearer-utf8"
    ),
    pytest.param("viewer", {"Authorization": b"Bearer \xff\xfe"}, "", id="viewer-bearer-latin1"),
    pytest.param(
        "viewer", {"Cookie": "swarmcore_ui_token=ünïcode".encode()}, "", id="viewer-cookie"
    ),
    pytest.param("viewer", {"Cookie": b"swarmcore_ui_token=\xff"}, "", id="viewer-cookie-latin1"),
    pytest.param("viewer", {}, "?token=%C3%BCn%C3%AFcode", id="viewer-query-token"),
    pytest.param("viewer", {}, "?token=%ED%A0%80", id="viewer-query-lone-surrogate"),
    pytest.param("viewer", {}, "?token=%FF", id="viewer-query-invalid-utf8"),
    pytest.param("a2a", {"Authorization": "Bearer ünïcode".encode()}, "", id="a2a-bearer-utf8"),
    pytest.param("a2a", {"Authorization": b"Bearer \xff"}, "", id="a2a-bearer-latin1"),
]


@pytest.mark.parametrize(("which", "headers", "query"), NON_ASCII)
def test_a_non_ascii_credential_is_a_401_not_a_500(
    guarded: tuple[str, str], which: str, headers: dict[str, bytes], query: str
) -> None:
    viewer, a2a = guarded
    if which == "viewer":
        response = httpx.get(f"{viewer}/{query}", headers=headers)
    else:
        response = httpx.post(f"{a2a}/", json=_send_message(), headers={**headers, **V1})
    assert response.status_code == 401, response.text
    assert "Traceback" not in response.text


CSRF = [
    pytest.param("ünïcode", id="non-ascii"),
    pytest.param("\udcff", id="lone-surrogate"),
    pytest.param("", id="empty"),
    pytest.param("x" * 10_000, id="long"),
]


@pytest.mark.parametrize("csrf", CSRF)
def test_a_bad_csrf_value_is_a_403_not_a_500(guarded: tuple[str, str], csrf: str) -> None:
    viewer, _ = guarded
    headers = {"Authorization": f"Bearer {TOKEN}"}
    body = f"csrf={csrf}".encode("utf-8", "surrogatepass")
    form = {**headers, "Content-Type": "application/x-www-form-urlencoded"}
    response = httpx.post(f"{viewer}/runs/whatever/delete", content=body, headers=form)
    assert response.status_code == 403, response.text
    assert "stale" in response.text


def test_a_non_ascii_token_works_and_stays_out_of_the_cookie(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    run_id = _stored_run(path)
    store = SQLiteStore(path)
    token = "pässwörd-ünïcode-tökén-long-enough"
    try:
        with (
            serve(create_app(store, token=token)) as url,
            httpx.Client(base_url=url, follow_redirects=True) as client,
        ):
            opened = client.get(f"/runs/{run_id}", params={"token": token})
            assert opened.status_code == 200, opened.text
            [hop] = opened.history
            assert hop.headers["location"] == f"/runs/{run_id}"  # relative: names no host
            name, _, value = hop.headers["set-cookie"].split(";")[0].partition("=")
            assert name == "swarmcore_ui_token"
            assert re.fullmatch("[0-9a-f]{64}", value)  # a digest of the token, not the token
            assert client.get("/").status_code == 200  # the cookie carries it
            bearer = {"Authorization": f"Bearer {token}".encode()}
            assert httpx.get(f"{url}/", headers=bearer).status_code == 200
    finally:
        store.close()


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/runs/x", id="a-page"),
        pytest.param("//evil.example/runs", id="protocol-relative"),
        pytest.param("/\\evil.example/runs", id="backslash"),
        pytest.param("///evil.example", id="three-slashes"),
    ],
)
def test_the_token_redirect_stays_on_this_server(guarded: tuple[str, str], path: str) -> None:
    viewer, _ = guarded
    with socket.create_connection(("127.0.0.1", _port(viewer)), timeout=30) as raw:
        request = f"GET {path}?token={TOKEN}&q=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        raw.sendall(f"{request}Connection: close\r\n\r\n".encode())
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    assert " 303 " in head.splitlines()[0], head
    [location] = [
        line.split(":", 1)[1].strip()
        for line in head.splitlines()
        if ":" in line and line.lower().startswith("location:")
    ]
    assert location.startswith("/"), location
    assert not location.startswith(("//", "/\\")), location
    assert location.endswith("?q=1"), location
    assert TOKEN not in location


# --- The A2A server's bounds: request size, task retention ------------------------------------

SIZES = [
    pytest.param("declared", 5000, id="content-length-over-the-limit"),
    pytest.param("chunked", 5000, id="chunked-body-over-the-limit"),
    pytest.param("chunked", 4097, id="one-byte-over"),
]


@pytest.mark.parametrize(("how", "size"), SIZES)
def test_a2a_refuses_a_request_over_its_size_limit(how: str, size: int) -> None:
    swarm, model = _echo_swarm()
    with serve(swarm.to_a2a(max_request_bytes=4096)) as url:
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"x": "'
        body += b"x" * (size - len(body) - 4) + b'"}}\n'
        assert len(body) == size
        if how == "declared":
            response = httpx.post(f"{url}/", content=body, headers=V1)
        else:
            chunks = iter([body[:1000], body[1000:]])
            response = httpx.post(f"{url}/", content=chunks, headers=V1)
        assert response.status_code == 413, response.text
        error = response.json()["error"]
        assert error["code"] == -32600
        assert "4 KiB at most" in error["message"]
        assert "--max-request-bytes" in error["message"]
        # a message under the limit still runs
        taken = httpx.post(f"{url}/", json=_send_message(), headers=V1, timeout=60)
        assert taken.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(model.requests) == 1


def _get_task(url: str, task_id: str) -> dict[str, Any]:
    call = {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}}
    return httpx.post(f"{url}/", json=call, headers=V1, timeout=60).json()


RETENTION = [
    pytest.param(3600.0, False, id="kept-while-its-time-lasts"),
    pytest.param(None, False, id="kept-with-no-limit"),
    pytest.param(0.2, True, id="dropped-after-its-time"),
]


@pytest.mark.parametrize(("keep", "dropped"), RETENTION)
def test_a2a_drops_finished_tasks_after_their_time_and_keeps_their_runs(
    tmp_path: Path, keep: float | None, dropped: bool
) -> None:
    swarm, _model = _echo_swarm(tmp_path / "runs.db")
    with serve(swarm.to_a2a(keep_tasks=keep)) as url:
        sent = httpx.post(f"{url}/", json=_send_message(), headers=V1, timeout=60).json()
        task_id = sent["result"]["task"]["id"]
        deadline = time.monotonic() + DEADLINE
        answer = _get_task(url, task_id)
        while dropped and "result" in answer:
            assert time.monotonic() < deadline, answer
            time.sleep(0.1)
            answer = _get_task(url, task_id)
    if dropped:
        assert answer["error"]["code"] == -32001, answer  # task not found
    else:
        assert answer["result"]["status"]["state"] == "TASK_STATE_COMPLETED"
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        record = store.get_run(task_id)  # the run outlives its task
        assert record is not None
        assert record.status == "succeeded"
    finally:
        store.close()


def test_serve_takes_its_bounds_and_host_names_from_the_command_line(tmp_path: Path) -> None:
    command = [
        *("serve", "tests/a2a/flows.py:flow", "--a2a", "--port", "0"),
        *("--store", str(tmp_path / "runs.db"), "--allowed-host", "agents.lan"),
        *("--max-request-bytes", "2048", "--keep-tasks", "0.2"),
    ]
    with serving_command(*command, cwd=Path(__file__).parents[2]) as line:
        url = line.split(" at ")[1].split(",")[0].strip().rstrip("/")
        port = _port(url)
        assert httpx.get(f"{url}{CARD}", headers={"Host": f"agents.lan:{port}"}).status_code == 200
        assert httpx.get(f"{url}{CARD}", headers={"Host": "evil.example"}).status_code == 421
        big = httpx.post(f"{url}/", json=_send_message("x" * 4000), headers=V1)
        assert big.status_code == 413
        assert "2 KiB at most" in big.json()["error"]["message"]
        sent = httpx.post(f"{url}/", json=_send_message("short"), headers=V1, timeout=60).json()
        task_id = sent["result"]["task"]["id"]
        deadline = time.monotonic() + DEADLINE
        while "result" in (answer := _get_task(url, task_id)):
            assert time.monotonic() < deadline, answer
            time.sleep(0.1)
        assert answer["error"]["code"] == -32001


# --- The viewer's live streams: capped per run, following a cheap mark -------------------------


def _running(path: Path, run_id: str) -> SQLiteStore:
    store = SQLiteStore(path)
    record = RunRecord(
        run_id=run_id,
        flow="one",
        task="go",
        status="running",
        started_at=time.time(),
        shape="{}",
        agents_total=1,
    )
    store.start_run(record)
    return store


def _events(response: httpx.Response) -> Iterator[str]:
    """The stream's comment lines and event names, as they come."""
    for line in response.iter_lines():
        if line.startswith(":"):
            yield line
        elif line.startswith("event: "):
            yield line.removeprefix("event: ")


def _open(client: httpx.Client, url: str, pages: ExitStack) -> httpx.Response:
    """An event stream held open until ``pages`` closes."""
    return pages.enter_context(client.stream("GET", url))


def test_a_run_takes_a_capped_number_of_live_pages(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    writer = _running(path, "busy-run")
    reader = SQLiteStore(path)
    try:
        with serve(create_app(reader, poll_seconds=0.05, live_per_run=2)) as url:
            live = f"{url}/runs/busy-run/events"
            with httpx.Client(timeout=60) as client, ExitStack() as pages:
                first, second = _open(client, live, pages), _open(client, live, pages)
                following = [
                    _events(first),
                    _events(second),
                ]  # a dropped iterator closes its stream
                for stream, events in zip((first, second), following, strict=True):
                    assert stream.status_code == 200
                    assert next(events) == ": following"
                refused = client.get(live)
                assert refused.status_code == 429
                assert "2 pages following it live" in refused.text
                _running(path, "other-run").close()  # another run is followed apart
                assert _open(client, f"{url}/runs/other-run/events", pages).status_code == 200
                first.close()  # a page goes: its place is free again
                deadline = time.monotonic() + DEADLINE
                while (again := _open(client, live, pages)).status_code == 429:
                    assert time.monotonic() < deadline
                    again.close()
                    time.sleep(0.05)
                following.append(_events(again))
                assert next(following[-1]) == ": following"
    finally:
        reader.close()
        writer.close()


class WholeRunsRefused(SQLiteStore):
    """A store whose runs cannot be read whole: what follows a run must do with its mark."""

    def get_run(self, run_id: str) -> RunRecord | None:
        raise StoreError(f"the live stream read run {run_id} whole")


def test_a_live_page_follows_the_runs_mark_not_the_whole_run(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    writer = _running(path, "marked-run")
    reader = WholeRunsRefused(path)
    seen: list[str] = []
    try:
        with (
            serve(create_app(reader, poll_seconds=0.05)) as url,
            httpx.stream("GET", f"{url}/runs/marked-run/events", timeout=60) as stream,
        ):
            events = _events(stream)
            seen.append(next(events))
            failure = AgentFailure(agent_name="one", error_type="ModelError", message="x")
            writer.save_failure("marked-run", failure)
            seen.append(next(e for e in events if not e.startswith(":")))
            writer.finish_run("marked-run", "failed", error="x")
            seen.extend(e for e in events if not e.startswith(":"))
    finally:
        reader.close()
        writer.close()
    assert seen == [": following", "changed", "finished"]


async def test_a_live_page_follows_a_dbos_run_by_its_mark(postgres: TemporaryPostgres) -> None:
    from swarmcore.engines.dbos import DBOSEngine, DBOSHistory

    class EngineRunsRefused(DBOSHistory):
        def get_run(self, run_id: str) -> RunRecord | None:
            raise StoreError(f"the live stream read run {run_id} whole")

    engine = DBOSEngine(postgres.new_database())
    try:
        model = FunctionModel(lambda request: "done")
        await Swarm(Agent("one", "One. Answer.", model=model.model), engine=engine).run(
            "go", run_id="engine-run"
        )

        def follow() -> tuple[list[str], list[str]]:
            history = EngineRunsRefused(engine.database_url)
            try:
                with serve(create_app(history, poll_seconds=0.05)) as url:
                    seen = []
                    for run_id in ("engine-run", "no-such-run"):
                        with httpx.stream("GET", f"{url}/runs/{run_id}/events", timeout=60) as s:
                            seen.append([e for e in _events(s) if not e.startswith(":")])
                    return seen[0], seen[1]
            finally:
                history.close()

        ended, unknown = await asyncio.to_thread(follow)
    finally:
        await engine.shutdown()
    assert ended == ["finished"]
    assert unknown == ["gone"]
