"""The viewer's pages over HTTP: what each shows, that stored text stays inert, and its guards."""

from __future__ import annotations

import asyncio
import re
import shutil
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from pydantic import BaseModel
from starlette.testclient import TestClient

from swarmcore import Agent, Approval, ApprovalRequest, ModelError, Swarm
from swarmcore._ui.app import create_app
from swarmcore.mcp import MCPServer
from swarmcore.store import RunRecord, SQLiteStore
from swarmcore.testing import Call, Fail, FunctionModel, RecordedRequest, Reply, ScriptedModel
from tests.ui.flows import HEALED
from tests.ui.runs import HOSTILE, SECRET_KEY, StoredRuns, cli_failed_run

LOCAL = "http://127.0.0.1"
"""The viewer answers the names it is bound for only (TestClient's default is testserver)."""


class Page(HTMLParser):
    """Every element of a page, its attributes, and its text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.html = html
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def all(self, tag: str, **having: str) -> list[dict[str, str]]:
        return [
            attrs
            for t, attrs in self.tags
            if t == tag and all(attrs.get(k.replace("_", "-")) == v for k, v in having.items())
        ]

    def classed(self, tag: str, cls: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag and cls in a.get("class", "").split()]


@pytest.fixture
def client(stored_runs: StoredRuns) -> Iterator[TestClient]:
    store = SQLiteStore(stored_runs.path)
    with TestClient(base_url=LOCAL, app=create_app(store, store_path=stored_runs.path)) as c:
        yield c
    store.close()


def page(client: TestClient, url: str) -> Page:
    response = client.get(url)
    assert response.status_code == 200, response.text
    return Page(response.text)


def graph_statuses(p: Page) -> dict[str, str]:
    """Agent to status class, from the flow drawing's nodes."""
    nodes = p.classed("g", "node")
    out: dict[str, str] = {}
    for node in nodes:
        if "data-agent" in node:
            classes = set(node["class"].split()) - {"node", "agent"}
            (out[node["data-agent"]],) = classes
    return out


def timeline_rows(p: Page) -> list[str]:
    return [a["data-agent"] for a in p.classed("g", "row")]


def test_the_diamond_page_draws_its_flow_timeline_and_the_tool_call(
    client: TestClient, stored_runs: StoredRuns
) -> None:
    p = page(client, f"/runs/{stored_runs.diamond}")
    assert len(p.classed("svg", "swarmcore-flow")) == 1
    assert len(p.classed("svg", "swarmcore-timeline")) == 1
    assert graph_statuses(p) == dict.fromkeys("abcd", "succeeded")
    assert sorted(timeline_rows(p)) == ["a", "b", "c", "d"]
    assert p.classed("details", "agent")[0]["data-agent"] == "a"  # it ran first
    text = "".join(p.text)
    assert "Is coffee good for you?" in text
    assert '"topic": "x"' in text  # the tool's arguments, as indented JSON
    assert "facts about x" in text  # ...and its result
    assert "b output" in text
    assert "4 of 4 finished" in text
    assert "5 model, 1 tool" in text
    assert not p.all("pre", id="resume-command")  # a succeeded run needs no resume


def test_the_failed_page_shows_the_error_and_the_exact_resume_command(
    client: TestClient, stored_runs: StoredRuns
) -> None:
    p = page(client, f"/runs/{stored_runs.failed}")
    assert graph_statuses(p) == {"first": "succeeded", "broken": "failed"}
    assert timeline_rows(p) == ["first", "broken"]
    text = "".join(p.text)
    assert "the model refused this request" in text
    assert p.all("span", id="run-status")[0]["data-status"] == "failed"
    command = re.search(r'<pre class="command" id="resume-command">([^<]*)</pre>', p.html)
    assert command is not None
    assert command.group(1) == (
        f"swarmcore runs resume {stored_runs.failed} --store {stored_runs.path}"
    )


def test_route_and_loop_pages_show_their_decisions_and_iterations(
    client: TestClient, stored_runs: StoredRuns
) -> None:
    routed = page(client, f"/runs/{stored_runs.routed}")
    statuses = graph_statuses(routed)
    assert statuses["draft"] == statuses["edit"] == statuses["publish"] == "succeeded"
    assert statuses["brief"] == "skipped"  # the branch not taken never ran
    assert len(routed.classed("g", "route")) == 1
    assert "long" in "".join(routed.text)
    assert "predicate" in "".join(routed.text)

    looped = page(client, f"/runs/{stored_runs.looped}")
    assert graph_statuses(looped) == {"writer": "succeeded", "critic": "succeeded"}
    assert timeline_rows(looped) == ["writer#1", "critic#1", "writer#2", "critic#2"]
    decisions = re.search(r'<section class="decisions">(.*?)</section>', looped.html, re.S)
    assert decisions is not None
    assert "<td>loop</td>" in decisions.group(1)
    assert "<code>2</code>" in decisions.group(1)  # two iterations, decided by until


def test_hostile_text_is_shown_as_text_and_nothing_in_it_is_active(
    client: TestClient, stored_runs: StoredRuns
) -> None:
    for url in (f"/runs/{stored_runs.hostile}", f"/runs/{stored_runs.hostile}?part=body", "/"):
        html = client.get(url).text
        p = Page(html)
        scripts = p.all("script")
        assert all(s.get("src") == "/static/ui.js" for s in scripts), url
        for tag, attrs in p.tags:
            assert not [a for a in attrs if a.startswith("on")], (url, tag, attrs)
            assert not attrs.get("href", "").lower().startswith("javascript:"), url
        assert not p.all("img")
        assert not p.all("b")
        assert "<script>window.pwned" not in html
    body = "".join(Page(client.get(f"/runs/{stored_runs.hostile}").text).text)
    assert body.count(HOSTILE) >= 3  # the task, the output, the tool result: all readable


def test_no_page_shows_the_api_key_and_the_store_holds_none(
    client: TestClient, stored_runs: StoredRuns
) -> None:
    runs = [
        stored_runs.diamond,
        stored_runs.failed,
        stored_runs.routed,
        stored_runs.looped,
        stored_runs.hostile,
    ]
    urls = ["/", "/?status=failed", "/static/ui.js", "/static/ui.css"]
    urls += [f"/runs/{r}" for r in runs] + [f"/runs/{r}/events" for r in runs]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        assert SECRET_KEY not in response.text, url
        assert SECRET_KEY[:12] not in response.text, url
    assert SECRET_KEY.encode() not in stored_runs.path.read_bytes()


def test_every_response_carries_a_policy_that_only_runs_our_own_script(
    client: TestClient, stored_runs: StoredRuns
) -> None:
    for url in ("/", f"/runs/{stored_runs.diamond}", "/static/ui.js", "/runs/nope"):
        headers = client.get(url).headers
        policy = headers["content-security-policy"]
        assert "script-src 'self'" in policy
        assert "default-src 'none'" in policy
        assert headers["x-content-type-options"] == "nosniff"


def test_a_search_no_store_can_answer_is_a_400_not_a_broken_store(client: TestClient) -> None:
    response = client.get("/?q=" + "x" * 1001)
    assert response.status_code == 400
    assert "This request cannot be answered" in response.text
    assert "could not be read" not in response.text
    assert "search text" in response.text


def test_an_unknown_run_is_a_404_page(client: TestClient) -> None:
    response = client.get("/runs/no-such-run")
    assert response.status_code == 404
    assert "No such run" in response.text


def test_a_shape_that_cannot_be_drawn_is_a_note_not_an_error(tmp_path: Path) -> None:
    model = FunctionModel(lambda r: Reply(text="ok"))
    store = SQLiteStore(tmp_path / "runs.db")
    result = asyncio.run(Swarm(Agent("a", "a.", model=model.model), store=store).run("t"))
    with sqlite3.connect(tmp_path / "runs.db") as db:  # damage it as a bad write would
        db.execute("UPDATE runs SET shape = '{\"no\": ' WHERE run_id = ?", (result.run_id,))
    with TestClient(base_url=LOCAL, app=create_app(store)) as c:
        response = c.get(f"/runs/{result.run_id}")
    assert response.status_code == 200
    assert "cannot be drawn" in response.text
    assert "swarmcore-timeline" in response.text


def _record(stored_runs: StoredRuns, run_id: str) -> RunRecord:
    store = SQLiteStore(stored_runs.path)
    try:
        record = store.get_run(run_id)
    finally:
        store.close()
    assert record is not None
    return record


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, "no action form on the page"
    return found.group(1)


def test_read_only_by_default_no_forms_and_posts_refused(
    client: TestClient, stored_runs: StoredRuns
) -> None:
    html = client.get(f"/runs/{stored_runs.failed}").text
    assert '<form method="post"' not in html
    response = client.post(f"/runs/{stored_runs.failed}/delete", data={"csrf": "x"})
    assert response.status_code == 403
    assert "read-only" in response.text
    assert client.get(f"/runs/{stored_runs.failed}").status_code == 200  # still there


def test_actions_need_the_flag_and_the_page_s_csrf_token(
    stored_runs: StoredRuns, tmp_path: Path
) -> None:
    path = tmp_path / "copy.db"
    shutil.copy(stored_runs.path, path)
    store = SQLiteStore(path)
    with TestClient(
        base_url=LOCAL, app=create_app(store, store_path=path, allow_actions=True)
    ) as c:
        url = f"/runs/{stored_runs.diamond}"
        token = _csrf(c.get(url).text)
        for sent in ({}, {"csrf": ""}, {"csrf": token[:-1] + "x"}):
            response = c.post(f"{url}/delete", data=sent, follow_redirects=False)
            assert response.status_code == 403, sent
        assert c.get(url).status_code == 200
        response = c.post(f"{url}/delete", data={"csrf": token}, follow_redirects=False)
        assert response.status_code == 303
        assert c.get(url).status_code == 404
        # A succeeded run cannot be resumed; an unknown action is refused.
        routed = f"/runs/{stored_runs.routed}"
        for action in ("resume", "explode"):
            response = c.post(f"{routed}/{action}", data={"csrf": token})
            assert response.status_code == 400, action
    assert store.get_run(stored_runs.routed) is not None
    store.close()


def test_the_resume_button_resumes_a_failed_run_to_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    run_id = cli_failed_run(path)
    healed = tmp_path / "healed"
    healed.touch()
    monkeypatch.setenv(HEALED, str(healed))  # the resumed process inherits it
    store = SQLiteStore(path)
    with TestClient(
        base_url=LOCAL, app=create_app(store, store_path=path, allow_actions=True)
    ) as c:
        html = c.get(f"/runs/{run_id}").text
        assert 'action="/runs/' in html
        response = c.post(
            f"/runs/{run_id}/resume", data={"csrf": _csrf(html)}, follow_redirects=False
        )
        assert response.status_code == 303
        deadline = time.monotonic() + 120
        while (record := store.get_run(run_id)) is not None and record.status != "succeeded":
            assert time.monotonic() < deadline, record.status
            time.sleep(0.2)
        assert record is not None
        assert sorted(r.agent_name for r in record.results) == ["broken", "first"]
    store.close()


def test_with_a_token_every_request_must_carry_it(stored_runs: StoredRuns) -> None:
    store = SQLiteStore(stored_runs.path)
    secret = "a-long-random-token-for-this-test"
    with TestClient(base_url=LOCAL, app=create_app(store, token=secret)) as c:
        url = f"/runs/{stored_runs.diamond}"
        for path in ("/", url, "/static/ui.css", f"{url}/events"):
            assert c.get(path).status_code == 401, path
        assert c.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get(f"{url}?token=wrong").status_code == 401
        assert c.get(url, headers={"Authorization": f"Bearer {secret}"}).status_code == 200
        response = c.get(f"{url}?token={secret}", follow_redirects=False)
        assert response.status_code == 303
        assert response.headers["location"].endswith(url)  # the token leaves the URL
        assert "httponly" in response.headers["set-cookie"].lower()
        assert c.get(url).status_code == 200  # the cookie carries it from now on
        assert secret not in c.get(url).text
    store.close()


def test_a_running_run_s_event_stream_follows_it_to_the_end(tmp_path: Path) -> None:
    def answer(request: RecordedRequest) -> Reply:
        return Reply(text="ok", delay=0.4)

    model = FunctionModel(answer)
    flow = Agent("one", "one.", model=model.model) >> Agent("two", "two.", model=model.model)
    path = tmp_path / "runs.db"
    store = SQLiteStore(path)
    ran = threading.Thread(target=lambda: asyncio.run(Swarm(flow, store=store).run("go")))
    ran.start()
    deadline = time.monotonic() + 30
    while not store.list_runs():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    [summary] = store.list_runs()
    reader = SQLiteStore(path)
    try:
        with TestClient(base_url=LOCAL, app=create_app(reader, poll_seconds=0.05)) as c:
            first = Page(c.get(f"/runs/{summary.run_id}").text)
            assert first.all("main", id="run")[0]["data-live"].endswith("/events")
            events: list[str] = []
            with c.stream("GET", f"/runs/{summary.run_id}/events") as stream:
                assert stream.headers["content-type"].startswith("text/event-stream")
                for line in stream.iter_lines():
                    if line.startswith("event: "):
                        events.append(line.removeprefix("event: "))
            last = Page(c.get(f"/runs/{summary.run_id}").text)
    finally:
        ran.join()
        reader.close()
        store.close()
    assert events[-1] == "finished"
    assert "changed" in events  # at least one agent finished while we watched
    assert "data-live" not in str(last.all("main", id="run")[0])
    assert graph_statuses(last) == {"one": "succeeded", "two": "succeeded"}


def test_the_runs_page_lists_filters_and_pages_newest_first(
    client: TestClient, stored_runs: StoredRuns, tmp_path: Path
) -> None:
    p = page(client, "/")
    rows = p.all("tr")[1:]
    assert {r["data-run-id"]: r["data-status"] for r in rows} == {
        stored_runs.hostile: "succeeded",
        stored_runs.looped: "succeeded",
        stored_runs.routed: "succeeded",
        stored_runs.diamond: "succeeded",
        stored_runs.failed: "failed",
    }
    assert rows[0]["data-run-id"] == stored_runs.hostile  # the newest
    diamond = re.search(rf'data-run-id="{stored_runs.diamond}".*?</tr>', p.html, re.S)
    assert diamond is not None
    assert "4/4" in diamond.group(0)
    tokens = sum(
        r.token_usage.total_tokens for r in _record(stored_runs, stored_runs.diamond).results
    )
    assert f'<td class="num">{tokens:,}</td>' in diamond.group(0)
    failed = page(client, "/?status=failed")
    assert [r["data-run-id"] for r in failed.all("tr")[1:]] == [stored_runs.failed]
    assert "1 run match" in "".join(failed.text)
    routed = page(client, "/?q=ROUTE+THIS")  # the task, whatever its case
    assert [r["data-run-id"] for r in routed.all("tr")[1:]] == [stored_runs.routed]
    assert not page(client, "/?q=%25nothing_like%25").all("tr")
    assert page(client, "/?status=bogus&before=garbage").all("tr")  # ignored, not a 500

    # 60 runs: two pages, each run once, newest first, the second reached by its link.
    store = SQLiteStore(tmp_path / "many.db")
    for i in range(60):
        store.start_run(
            RunRecord(
                run_id=f"run{i:03d}",
                flow="a",
                task=f"task {i}",
                status="running",
                started_at=1_700_000_000.0 + i // 2,  # pairs share a start: the id breaks ties
                shape="",
                agents_total=1,
            )
        )
        store.finish_run(f"run{i:03d}", "succeeded")
    with TestClient(base_url=LOCAL, app=create_app(store)) as c:
        first = Page(c.get("/").text)
        assert "60 runs" in "".join(first.text)
        ids = [r["data-run-id"] for r in first.all("tr")[1:]]
        assert len(ids) == 50
        [link] = first.all("a", rel="next")
        second = Page(c.get(link["href"].replace("&amp;", "&")).text)
        ids += [r["data-run-id"] for r in second.all("tr")[1:]]
        assert not second.all("a", rel="next")
    store.close()
    assert ids == [f"run{i:03d}" for i in reversed(range(60))]


def test_structured_output_and_the_budget_are_shown(tmp_path: Path) -> None:
    class Verdict(BaseModel):
        verdict: str
        score: int

    model = FunctionModel(lambda r: Reply(text='{"verdict": "publish", "score": 7}'))
    judge = Agent("judge", "judge decides.", model=model.model, output_type=Verdict)
    store = SQLiteStore(tmp_path / "runs.db")
    result = asyncio.run(Swarm(judge, store=store, max_tokens=100_000).run("judge it"))
    with TestClient(base_url=LOCAL, app=create_app(store)) as c:
        p = page(c, f"/runs/{result.run_id}")
    store.close()
    text = "".join(p.text)
    assert "Structured output" in text
    assert '"verdict": "publish"' in text
    assert '"score": 7' in text
    assert "budget (tokens)" in text
    assert f"{result.token_usage.total_tokens:,} of 100,000" in text


def test_a_resumed_run_still_shows_its_earlier_failure(tmp_path: Path) -> None:
    down = [True]

    def answer(request: RecordedRequest) -> Reply | Fail:
        who = request.system.split()[0]
        if who == "writer" and down[0]:
            return Fail(400, "the provider is down today")
        return Reply(text=f"{who} did it")

    model = FunctionModel(answer)
    researcher, writer = (
        Agent(n, f"{n} works.", model=model.model) for n in ("researcher", "writer")
    )
    store = SQLiteStore(tmp_path / "runs.db")
    swarm = Swarm(researcher >> writer, store=store)
    with pytest.raises(ModelError) as failed:
        asyncio.run(swarm.run("write it"))
    assert failed.value.partial is not None
    run_id = failed.value.partial.run_id
    down[0] = False
    asyncio.run(swarm.resume(run_id))

    with TestClient(base_url=LOCAL, app=create_app(store, store_path=store.path)) as c:
        p = page(c, f"/runs/{run_id}")
    store.close()
    assert p.all("span", id="run-status")[0]["data-status"] == "succeeded"
    assert graph_statuses(p) == {"researcher": "succeeded", "writer": "succeeded"}
    assert len(p.all("li", data_status="failed")) == 1  # the attempt before the resume
    section = p.html[p.html.index('id="earlier-attempts"') :]
    section = section[: section.index("</section>")]
    assert "failed, then resumed " in section
    assert "the provider is down today" in section
    assert "writer: ModelError: " in section
    assert "An earlier attempt failed: ModelError: " in agent_box(p, "writer")
    assert "writer did it" in agent_box(p, "writer")  # beside the output that finished it
    assert "An earlier attempt" not in agent_box(p, "researcher")


def agent_box(p: Page, name: str) -> str:
    """An agent's part of a run page, up to the end of its first nested box."""
    box = p.html[p.html.index(f'id="agent-{name}"') :]
    return box[: box.index("</details>")]


def test_a_reasoning_summary_is_shown_and_the_encrypted_reasoning_never(tmp_path: Path) -> None:
    from swarmcore.testing import MockOpenAIServer

    reply = Reply(
        text="Four.", reasoning_summary="Two and two.", encrypted_reasoning="gAAA-never-shown"
    )
    store = SQLiteStore(tmp_path / "runs.db")
    with MockOpenAIServer([reply]) as server:
        agent = Agent("a", "Add.", api="responses", **server.model_kwargs)
        result = asyncio.run(Swarm(agent, store=store).run("2 + 2?"))
    with TestClient(base_url=LOCAL, app=create_app(store)) as c:
        html = c.get(f"/runs/{result.run_id}").text
    store.close()
    assert "Reasoning summary: Two and two." in html
    assert "gAAA-never-shown" not in html


def test_a_tool_calls_elicitations_show_question_mode_fields_url_and_answer(
    tmp_path: Path,
) -> None:
    server = Path(__file__).parents[1] / "integration" / "_mcp_elicit_server.py"
    secret = "sk-desk-0123456789abcdef"
    env = {"MCP_TEST_BOOKINGS": str(tmp_path / "bookings"), "DESK_API_KEY": secret}
    desk = MCPServer.stdio(sys.executable, [str(server), "stdio"], env=env, name="desk")
    model = ScriptedModel(
        [Reply(tool_calls=[Call("book", {"room": "12"}), Call("login", {})]), Reply(text="done")]
    )

    def approve(request: ApprovalRequest) -> Approval:
        assert request.elicitation is not None
        if request.elicitation.mode == "url":
            return Approval.deny("not on this machine")
        return Approval.edit({"name": secret, "nights": 3})

    store = SQLiteStore(tmp_path / "runs.db")
    agent = Agent("clerk", "Book rooms.", model=model.model, tools=[desk])
    result = asyncio.run(Swarm(agent, store=store, approve=approve).run("book and log in"))
    with TestClient(base_url=LOCAL, app=create_app(store)) as c:
        p = page(c, f"/runs/{result.run_id}")
    store.close()
    assert [(q["data-mode"], q["data-action"]) for q in p.classed("li", "elicitation")] == [
        ("form", "accept"),
        ("url", "decline"),
    ]
    text = "".join(p.text)
    assert "Who is the booking for, and for how many nights?" in text
    assert re.findall(r'<code class="field">(\w+)</code>', p.html) == ["name", "nights"]
    assert "https://desk.example/login" in text
    assert "Log in to the desk" in text
    assert "by the run's approval callback" in text
    assert "not on this machine" in text
    assert '"nights": 3' in text  # the values sent, as recorded
    [values] = p.html.split('<pre class="text content">')[1:]
    assert secret not in values.split("</pre>")[0]  # redacted on the record, so on the page
    assert not p.all("a", href="https://desk.example/login")  # a server's URL is text, not a link
