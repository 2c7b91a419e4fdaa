"""The viewer in a real browser: Playwright driving the system's Chromium over a served store.

The runs are real (``tests.ui.runs``: made on in-process models), the server is
uvicorn on 127.0.0.1, and every check is what a reader sees: elements visible
with a size, not merely present in the HTML. Without Chromium these tests skip,
unless ``SWARMCORE_REQUIRE_BROWSER=1`` (CI), where they fail. Screenshots go to
``$SWARMCORE_SCREENSHOTS`` (else a temporary directory).
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, ViewportSize, expect, sync_playwright

from swarmcore import Agent, Swarm
from swarmcore._ui.app import create_app
from swarmcore.store import SQLiteStore
from swarmcore.testing import FunctionModel, RecordedRequest, Reply
from tests.ui.browser import chromium_executable, serve
from tests.ui.runs import HOSTILE, StoredRuns

WAIT_MS = 30_000  # generous: a loaded 2-core machine runs the suite beside the browser
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    executable = chromium_executable()
    if executable is None:
        why = "no Chromium (apt-get install chromium, or set SWARMCORE_CHROMIUM to one)"
        if os.environ.get("SWARMCORE_REQUIRE_BROWSER") == "1":
            pytest.fail(f"SWARMCORE_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)
    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def viewer(stored_runs: StoredRuns) -> Iterator[str]:
    """The stored runs served read-only; the base URL."""
    store = SQLiteStore(stored_runs.path)
    try:
        with serve(create_app(store, store_path=stored_runs.path)) as url:
            yield url
    finally:
        store.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: ``$SWARMCORE_SCREENSHOTS``, else a temporary directory."""
    where = os.environ.get("SWARMCORE_SCREENSHOTS")
    if not where:
        return tmp_path_factory.mktemp("screenshots")
    path = Path(where)
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def page(chromium: Browser, viewer: str) -> Iterator[Page]:
    """A fresh page on the viewer; any script error or console error fails the test."""
    context = chromium.new_context(viewport=VIEWPORT, base_url=viewer)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors = _watch(page)
    try:
        yield page
    finally:
        context.close()
    assert not errors, errors


def _watch(page: Page) -> list[str]:
    """Errors the page reports (a script that failed, a CSP violation, a failed load)."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    page.on(
        "console",
        lambda message: (
            errors.append(f"console: {message.text}") if message.type == "error" else None
        ),
    )
    return errors


def _agents_of(locator: Locator) -> list[str]:
    return locator.evaluate_all("els => els.map(e => e.dataset.agent)")


def _drawn(locator: Locator) -> None:
    """Visible, with a size: drawn, not only in the DOM."""
    expect(locator).to_be_visible()
    box = locator.bounding_box()
    assert box is not None
    assert box["width"] > 0, box
    assert box["height"] > 0, box


def _inert(page: Page) -> None:
    assert page.evaluate("typeof window.pwned") == "undefined"


def test_runs_page_lists_the_runs_and_filters_by_status_and_text(
    page: Page, stored_runs: StoredRuns, shots: Path
) -> None:
    page.goto("/")
    rows = page.locator("table.runs tbody tr[data-run-id]")
    expect(rows).to_have_count(5)
    shown = dict(rows.evaluate_all("rs => rs.map(r => [r.dataset.runId, r.dataset.status])"))
    assert shown == {
        stored_runs.diamond: "succeeded",
        stored_runs.failed: "failed",
        stored_runs.routed: "succeeded",
        stored_runs.looped: "succeeded",
        stored_runs.hostile: "succeeded",
    }
    for k in range(5):
        _drawn(rows.nth(k))
    _inert(page)  # the hostile run's task is listed too
    page.screenshot(path=shots / "runs.png", full_page=True)

    page.locator("select[name=status]").select_option("failed")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"[?&]status=failed"))
    expect(rows).to_have_count(1)
    expect(rows).to_have_attribute("data-run-id", stored_runs.failed)

    page.locator("select[name=status]").select_option("")
    page.locator("input[name=q]").fill("coffee")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"[?&]q=coffee"))
    expect(rows).to_have_count(1)
    expect(rows).to_have_attribute("data-run-id", stored_runs.diamond)

    rows.locator("td.id a").click()  # on to the run's page
    expect(page.locator("main#run")).to_have_attribute("data-run-id", stored_runs.diamond)


# run, the flow's agents with their status classes, the timeline's rows (in order)
RUN_PAGES = [
    ("diamond", {"a": "succeeded", "b": "succeeded", "c": "succeeded", "d": "succeeded"}, None),
    ("failed", {"first": "succeeded", "broken": "failed"}, ["first", "broken"]),
    (
        "routed",
        {
            "triage": "succeeded",
            "brief": "skipped",  # the branch the route did not take: it never ran
            "draft": "succeeded",
            "edit": "succeeded",
            "publish": "succeeded",
        },
        ["triage", "draft", "edit", "publish"],
    ),
    (
        "looped",
        {"writer": "succeeded", "critic": "succeeded"},
        ["writer#1", "critic#1", "writer#2", "critic#2"],
    ),
]


@pytest.mark.parametrize(("name", "statuses", "rows"), RUN_PAGES, ids=[p[0] for p in RUN_PAGES])
def test_run_page_draws_the_flow_and_the_timeline(
    page: Page,
    stored_runs: StoredRuns,
    shots: Path,
    name: str,
    statuses: dict[str, str],
    rows: list[str] | None,
) -> None:
    run_id = getattr(stored_runs, name)
    page.goto(f"/runs/{run_id}")
    expect(page.locator("main#run")).to_have_attribute("data-run-id", run_id)
    assert page.locator("main#run").get_attribute("data-live") is None

    graph = page.locator("svg.swarmcore-flow")
    _drawn(graph)
    nodes = graph.locator("g.node.agent")
    expect(nodes).to_have_count(len(statuses))
    assert sorted(_agents_of(nodes)) == sorted(statuses)
    for agent, status in statuses.items():
        node = graph.locator(f'g.node.agent[data-agent="{agent}"]')
        expect(node).to_have_class(re.compile(rf"(^|\s){status}(\s|$)"))
        _drawn(node)
        expect(node.locator("text")).to_have_text(agent)

    timeline = page.locator("svg.swarmcore-timeline")
    _drawn(timeline)
    lines = timeline.locator("g.row")
    expected = rows or list(statuses)  # the diamond's b and c start together: any order
    expect(lines).to_have_count(len(expected))
    drawn_rows = _agents_of(lines)
    assert drawn_rows == expected if rows else sorted(drawn_rows) == sorted(expected)
    for k in range(len(expected)):
        _drawn(lines.nth(k).locator("rect.agent"))

    agents = page.locator("details.agent")
    assert sorted(_agents_of(agents)) == sorted(expected)
    for k in range(len(expected)):
        _drawn(agents.nth(k).locator(":scope > summary"))

    if name == "diamond":  # b called its tool: a bar on b's row, a row in b's tool calls
        assert timeline.locator('g.row[data-agent="b"] .tool').count() >= 1
        b = page.locator('details.agent[data-agent="b"]')
        b.locator(":scope > summary").click()
        expect(b.locator("table.calls").first).to_contain_text("lookup")
        expect(b.locator("table.calls").first).to_contain_text("facts about x")
        b.locator(":scope > summary").click()
    if name in ("diamond", "failed"):
        page.screenshot(path=shots / f"run-{name}.png", full_page=True)


def test_failed_run_shows_its_error_and_the_resume_command(
    page: Page, stored_runs: StoredRuns
) -> None:
    page.goto(f"/runs/{stored_runs.failed}")
    expect(page.locator("#run-status")).to_have_attribute("data-status", "failed")
    error = page.locator("dl.facts .error-text")
    expect(error).to_be_visible()
    expect(error).to_contain_text("the model refused this request")
    broken = page.locator('details.agent[data-agent="broken"]')
    expect(broken).to_have_attribute("open", "")  # a failed agent is open from the start
    expect(broken.locator(".error-text")).to_be_visible()
    expect(page.locator('section.failures tr[data-agent="broken"]')).to_be_visible()
    command = page.locator("#resume-command")
    expect(command).to_be_visible()
    expect(command).to_have_text(
        re.compile(rf"^swarmcore runs resume {stored_runs.failed} --store \S*runs\.db$")
    )


def test_hostile_run_renders_inert(page: Page, stored_runs: StoredRuns) -> None:
    page.goto(f"/runs/{stored_runs.hostile}")
    page.wait_for_load_state("networkidle")  # an image would have loaded (or failed) by now
    _inert(page)
    evil = page.locator('details.agent[data-agent="evil"]')
    evil.locator(":scope > summary").click()
    evil.locator("details.messages > summary").click()
    _drawn(evil.locator("pre.output"))
    page.wait_for_load_state("networkidle")
    _inert(page)
    # The only script is our own; nothing the run recorded became an element.
    scripts = page.locator("script").evaluate_all("ss => ss.map(s => s.getAttribute('src'))")
    assert scripts == ["/static/ui.js"]
    for active in ("img", "[onerror]", "[onload]", "a[href^='javascript']", "b"):
        assert page.locator(active).count() == 0, active
    expect(page.locator("svg")).to_have_count(2)  # the flow and the timeline
    # ...and it reads as the text it is: the task, the output, the tool's result.
    expect(page.locator("dl.facts pre.text").first).to_contain_text(HOSTILE)
    expect(evil.locator("pre.output")).to_contain_text(HOSTILE)
    expect(evil.locator("table.calls").first).to_contain_text(f"{HOSTILE} about x")
    _inert(page)


def test_pages_read_without_javascript(
    chromium: Browser, viewer: str, stored_runs: StoredRuns
) -> None:
    context = chromium.new_context(viewport=VIEWPORT, base_url=viewer, java_script_enabled=False)
    context.set_default_timeout(WAIT_MS)
    try:
        page = context.new_page()
        page.goto(f"/runs/{stored_runs.diamond}")
        nodes = page.locator("svg.swarmcore-flow g.node.agent")
        expect(nodes).to_have_count(4)
        for k in range(4):
            _drawn(nodes.nth(k))
        expect(page.locator("svg.swarmcore-timeline g.row")).to_have_count(4)
        agents = page.locator("details.agent")
        expect(agents).to_have_count(4)
        agents.first.locator(":scope > summary").click()  # <details> opens without a script
        _drawn(agents.first.locator("pre.output"))
        page.goto("/?status=failed")
        expect(page.locator("table.runs tbody tr[data-run-id]")).to_have_count(1)
    finally:
        context.close()


def test_live_run_is_followed_to_its_end_without_a_reload(
    chromium: Browser, tmp_path: Path
) -> None:
    path = tmp_path / "live.db"
    waiting, release = threading.Event(), threading.Event()

    async def answer(request: RecordedRequest) -> Reply:
        who = request.system.split()[0]
        if who == "late":  # holds the run open until the page has been seen live
            waiting.set()
            await asyncio.to_thread(release.wait, 120)
        return Reply(text=f"{who} output\n<summary>{who} done</summary>", delay=0.2)

    model = FunctionModel(answer)
    names = ("early", "late", "side", "last")
    early, late, side, last = (Agent(n, f"{n} does its part.", model=model.model) for n in names)
    failures: list[BaseException] = []

    def run() -> None:
        store = SQLiteStore(path)
        try:
            asyncio.run(Swarm(early >> (late | side) >> last, store=store).run("follow me"))
        except BaseException as exc:
            failures.append(exc)
        finally:
            store.close()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    reader: SQLiteStore | None = None
    try:
        assert waiting.wait(60), failures
        reader = SQLiteStore(path)
        [summary] = reader.list_runs()
        assert summary.status == "running"
        with serve(create_app(reader, poll_seconds=0.1)) as url:
            context = chromium.new_context(viewport=VIEWPORT, base_url=url)
            context.set_default_timeout(WAIT_MS)
            try:
                page = context.new_page()
                errors = _watch(page)
                page.goto(f"/runs/{summary.run_id}")
                main = page.locator("main#run")
                expect(main).to_have_attribute("data-live", f"/runs/{summary.run_id}/events")
                expect(page.locator("#run-status")).to_have_attribute("data-status", "running")
                last_node = page.locator('svg.swarmcore-flow g.node.agent[data-agent="last"]')
                expect(last_node).to_have_class(re.compile(r"\bpending\b"))
                page.evaluate("window.sameDocument = true")  # gone if the page reloads

                release.set()
                expect(main).to_have_attribute("data-finished", "1")
                expect(page.locator("#run-status")).to_have_attribute("data-status", "succeeded")
                assert main.get_attribute("data-live") is None
                graph = page.locator("svg.swarmcore-flow")
                expect(graph.locator("g.node.agent")).to_have_count(4)
                for agent in names:
                    node = graph.locator(f'g.node.agent[data-agent="{agent}"]')
                    expect(node).to_have_class(re.compile(r"\bsucceeded\b"))
                    _drawn(node)
                expect(page.locator("svg.swarmcore-timeline g.row")).to_have_count(4)
                expect(page.locator("details.agent")).to_have_count(4)
                assert page.evaluate("window.sameDocument") is True
                assert not errors, errors
            finally:
                context.close()
    finally:
        release.set()
        worker.join(60)
        if reader is not None:
            reader.close()
    assert not failures, failures


def test_a_page_past_a_runs_live_cap_says_live_updates_are_off(
    chromium: Browser, tmp_path: Path
) -> None:
    path = tmp_path / "capped.db"
    model = FunctionModel(lambda request: "done")
    store = SQLiteStore(path)
    try:
        run_id = (
            Swarm(Agent("one", "One. Answer.", model=model.model), store=store)
            .run_sync("follow me")
            .run_id
        )
        record = store.get_run(run_id)
        assert record is not None
        store.start_run(record)  # running again, as a run whose process died reads
        with serve(create_app(store, poll_seconds=0.1, live_per_run=1)) as url:
            context = chromium.new_context(viewport=VIEWPORT, base_url=url)
            context.set_default_timeout(WAIT_MS)
            try:
                first = context.new_page()
                first.goto(f"/runs/{run_id}")
                expect(first.locator("main#run")).to_have_attribute("data-following", "1")
                second = context.new_page()
                second.goto(f"/runs/{run_id}")
                note = second.locator("#live-off")
                expect(note).to_be_visible()
                expect(note).to_contain_text("reload it")
                assert second.locator("main#run").get_attribute("data-live") is None
                assert first.locator("#live-off").count() == 0
            finally:
                context.close()
    finally:
        store.close()
