"""The per-model limiter: validation, the three gates, FIFO, cancellation, loops, registry.

Timing checks assert lower bounds on waiting only, never how fast things ran.
"""

from __future__ import annotations

import ast
import asyncio
import gc
import logging
import math
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmcore import Agent, Swarm
from swarmcore.engines import LocalEngine
from swarmcore.errors import UserError
from swarmcore.llm import _limits as limits
from swarmcore.llm._limits import (
    Limiter,
    ModelLimit,
    Permit,
    clear_model_limits,
    limit_model,
    limiter_for,
    model_limits,
)
from swarmcore.testing import OfflineModel


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    clear_model_limits()
    yield
    clear_model_limits()


def frozen() -> float:
    """A clock that never moves: buckets never refill, so admission is deterministic."""
    return 0.0


async def settle(limiter: Limiter, *, waiting: int) -> None:
    """Let queued tasks reach their sleep; bounded so a bug fails instead of hanging."""
    for _ in range(200):
        if limiter.waiting == waiting:
            return
        await asyncio.sleep(0.005)
    assert limiter.waiting == waiting


# --- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_in_flight", 0),
        ("max_in_flight", -1),
        ("max_in_flight", True),
        ("max_in_flight", 1.5),
        ("max_in_flight", 2.0),
        ("max_in_flight", "3"),
        ("requests_per_minute", 0),
        ("requests_per_minute", -10.0),
        ("requests_per_minute", False),
        ("requests_per_minute", math.nan),
        ("requests_per_minute", math.inf),
        ("requests_per_minute", "60"),
        ("tokens_per_minute", 0.0),
        ("tokens_per_minute", -1),
        ("tokens_per_minute", True),
        ("tokens_per_minute", [1000]),
        ("max_in_flight_per_worker", 0),
        ("max_in_flight_per_worker", 1.5),
        ("max_in_flight_per_worker", True),
    ],
)
def test_model_limit_rejects_bad_values(field: str, value: object) -> None:
    with pytest.raises(UserError) as info:
        ModelLimit(**{field: value})  # type: ignore[arg-type]
    message = str(info.value)
    assert field in message
    assert repr(value) in message
    assert "None" in message
    assert f"{field}=" in message


def test_model_limit_accepts_positive_numbers_and_none() -> None:
    limit = ModelLimit(max_in_flight=1, requests_per_minute=0.5, tokens_per_minute=100)
    assert limit.max_in_flight == 1
    assert ModelLimit() == ModelLimit(None, None, None, None)
    assert ModelLimit(max_in_flight_per_worker=3).max_in_flight_per_worker == 3
    with pytest.raises(AttributeError):
        limit.max_in_flight = 2  # type: ignore[misc]


@pytest.mark.parametrize("bad", [-1, True, 1.5, "10"])
async def test_acquire_rejects_bad_estimates(bad: object) -> None:
    limiter = Limiter(ModelLimit(max_in_flight=1))
    with pytest.raises(UserError, match="estimated_tokens"):
        await limiter.acquire(bad)  # type: ignore[arg-type]
    assert limiter.in_flight == 0
    assert limiter.waiting == 0


async def test_release_with_a_bad_count_still_releases() -> None:
    limiter = Limiter(ModelLimit(max_in_flight=1))
    permit = await limiter.acquire(10)
    with pytest.raises(UserError, match="actual_tokens"):
        permit.release(-5)
    assert permit.released
    assert limiter.in_flight == 0


def test_limiter_and_registry_reject_bad_arguments() -> None:
    with pytest.raises(UserError, match="ModelLimit"):
        Limiter({"max_in_flight": 1})  # type: ignore[arg-type]
    with pytest.raises(UserError, match="limit_model: model"):
        limit_model("  ", max_in_flight=1)
    with pytest.raises(UserError, match="requests_per_minute"):
        limit_model("m", requests_per_minute=-1)
    assert model_limits() == {}


# --- max_in_flight ----------------------------------------------------------------------------


async def test_max_in_flight_caps_concurrency_and_everyone_finishes() -> None:
    limiter = Limiter(ModelLimit(max_in_flight=2))
    running = peak = done = 0

    async def call() -> None:
        nonlocal running, peak, done
        permit = await limiter.acquire()
        try:
            running += 1
            peak = max(peak, running, limiter.in_flight)
            await asyncio.sleep(0.01)
        finally:
            running -= 1
            permit.release()
        done += 1

    await asyncio.gather(*(call() for _ in range(10)))
    assert peak == 2
    assert done == 10
    assert limiter.in_flight == 0
    assert limiter.waiting == 0


@pytest.mark.parametrize(
    ("limit", "cap"),
    [
        (ModelLimit(max_in_flight_per_worker=2), 2),
        (ModelLimit(max_in_flight=5, max_in_flight_per_worker=2), 2),
        (ModelLimit(max_in_flight=2, max_in_flight_per_worker=5), 2),
    ],
)
async def test_a_process_runs_at_most_the_smaller_in_flight_cap(
    limit: ModelLimit, cap: int
) -> None:
    limiter = Limiter(limit)
    held = [await limiter.acquire() for _ in range(cap)]
    waiting = asyncio.ensure_future(limiter.acquire())
    await asyncio.sleep(0)
    assert limiter.in_flight == cap
    assert not waiting.done()  # one more waits for a permit to come back
    held[0].release()
    held[0] = await waiting
    for permit in held:
        permit.release()
    assert limiter.in_flight == 0


async def test_limits_are_shared_only_through_the_runs_gate() -> None:
    limit = ModelLimit(max_in_flight=1)
    async with limits.shared_permit("m", limit, 5.0, None):  # nothing shared without an engine
        pass
    events: list[object] = []

    class Gate:
        async def acquire(self, model: str, limit: ModelLimit, hold: float | None) -> Gate:
            events.append(("acquire", model, limit, hold))
            return self

        async def release(self) -> None:
            events.append("release")

    async def failing_call() -> None:
        async with limits.shared_permit("m", limit, 5.0, Gate()):
            events.append("call")
            raise RuntimeError("the call failed")

    with pytest.raises(RuntimeError):
        await failing_call()
    assert events == [("acquire", "m", limit, 5.0), "call", "release"]


async def test_a_runs_model_calls_take_their_permits_from_its_engines_shared_limits() -> None:
    asked: list[str] = []

    class Gate:
        async def acquire(self, model: str, limit: ModelLimit, hold: float | None) -> Gate:
            asked.append(model)
            return self

        async def release(self) -> None:
            asked.append("released")

    model = OfflineModel()
    limits.limit_model(model.model, max_in_flight=2)
    try:
        swarm = Swarm(Agent("a", "a works.", model=model.model))
        await swarm.run("go")  # the default engine: limits held in this process only
        assert asked == []
        gate = Gate()
        engine = LocalEngine(shared_limits=lambda: gate)  # an engine whose runs share limits
        await Swarm(Agent("a", "a works.", model=model.model), engine=engine).run("go")
    finally:
        limits.limit_model(model.model)
    assert asked == [model.model, "released"]


# --- requests_per_minute ----------------------------------------------------------------------


async def test_requests_per_minute_paces_after_a_one_second_burst() -> None:
    # 600 rpm: a burst of 10, then one every 0.1 s, so the 15th starts >= 0.5 s in.
    limiter = Limiter(ModelLimit(requests_per_minute=600))
    starts: list[float] = []

    async def call() -> None:
        permit = await limiter.acquire()
        starts.append(time.monotonic())
        permit.release()

    begin = time.monotonic()
    await asyncio.gather(*(call() for _ in range(15)))
    assert len(starts) == 15
    assert starts[10] - begin >= 0.08
    assert starts[14] - begin >= 0.4
    assert limiter.in_flight == 0


async def test_low_requests_per_minute_has_a_burst_of_one() -> None:
    # 120 rpm: capacity max(1, 2) = 2 at 2/s; the 3rd request waits about 0.5 s.
    limiter = Limiter(ModelLimit(requests_per_minute=120))
    begin = time.monotonic()
    for _ in range(3):
        (await limiter.acquire()).release()
    assert time.monotonic() - begin >= 0.4


# --- tokens_per_minute ------------------------------------------------------------------------


async def test_tokens_estimate_is_charged_up_front() -> None:
    # 60,000 tpm: 1,000 tokens of capacity refilling at 1,000 per second.
    limiter = Limiter(ModelLimit(tokens_per_minute=60_000))
    first = await limiter.acquire(1000)
    begin = time.monotonic()
    second = await limiter.acquire(400)
    assert time.monotonic() - begin >= 0.3
    first.release()
    second.release()


async def test_tokens_debt_from_release_delays_the_next_request() -> None:
    limiter = Limiter(ModelLimit(tokens_per_minute=60_000))
    (await limiter.acquire(1000)).release(1500)  # 500 over the estimate: 500 in debt
    begin = time.monotonic()
    (await limiter.acquire(1)).release()
    assert time.monotonic() - begin >= 0.4


async def test_tokens_shortfall_is_refunded() -> None:
    limiter = Limiter(ModelLimit(tokens_per_minute=60_000), clock=frozen)
    (await limiter.acquire(1000)).release(0)  # refunded in full: the bucket is full again
    permit = await asyncio.wait_for(limiter.acquire(1000), 5)
    assert limiter.in_flight == 1
    permit.release()


async def test_oversized_request_goes_when_full_and_leaves_debt() -> None:
    limiter = Limiter(ModelLimit(tokens_per_minute=60_000), clock=frozen)
    big = await asyncio.wait_for(limiter.acquire(5000), 5)  # above the 1,000 capacity
    big.release()
    blocked = asyncio.create_task(limiter.acquire(0))  # 4,000 in debt: even 0 waits
    await settle(limiter, waiting=1)
    assert not blocked.done()
    blocked.cancel()
    with pytest.raises(asyncio.CancelledError):
        await blocked
    assert limiter.waiting == 0
    assert limiter.in_flight == 0


# --- FIFO -------------------------------------------------------------------------------------


async def test_waiters_are_served_in_arrival_order() -> None:
    limiter = Limiter(ModelLimit(max_in_flight=1))
    holder = await limiter.acquire()
    order: list[int] = []

    async def call(i: int) -> None:
        permit = await limiter.acquire()
        order.append(i)
        await asyncio.sleep(0)
        permit.release()

    tasks: list[asyncio.Task[None]] = []
    for i in range(6):
        tasks.append(asyncio.create_task(call(i)))
        await settle(limiter, waiting=i + 1)
    holder.release()
    await asyncio.gather(*tasks)
    assert order == list(range(6))


async def test_a_later_small_request_never_overtakes_an_earlier_big_one() -> None:
    limiter = Limiter(ModelLimit(tokens_per_minute=60_000))
    (await limiter.acquire(1000)).release()  # bucket empty
    order: list[str] = []

    async def call(name: str, tokens: int) -> None:
        permit = await limiter.acquire(tokens)
        order.append(name)
        permit.release()

    big = asyncio.create_task(call("big", 300))  # needs about 0.3 s of refill
    await settle(limiter, waiting=1)
    small = asyncio.create_task(call("small", 1))  # would fit after 1 ms on its own
    await settle(limiter, waiting=2)
    await asyncio.gather(big, small)
    assert order == ["big", "small"]


# --- cancellation -----------------------------------------------------------------------------


async def test_cancelled_head_waiter_passes_the_turn(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="asyncio")
    limiter = Limiter(ModelLimit(max_in_flight=1))
    holder = await limiter.acquire()
    first = asyncio.create_task(limiter.acquire())
    await settle(limiter, waiting=1)
    second = asyncio.create_task(limiter.acquire())
    await settle(limiter, waiting=2)

    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert limiter.waiting == 1
    assert limiter.in_flight == 1

    holder.release()
    permit = await asyncio.wait_for(second, 5)
    assert limiter.in_flight == 1
    assert limiter.waiting == 0
    permit.release()
    assert limiter.in_flight == 0
    gc.collect()
    assert not caplog.records


async def test_cancelling_the_head_wakes_the_next_when_capacity_is_free() -> None:
    # The head waits on the token bucket; the one behind it fits at once.
    limiter = Limiter(ModelLimit(tokens_per_minute=60_000), clock=frozen)
    (await limiter.acquire(800)).release()  # 200 tokens left, and the clock never refills
    head = asyncio.create_task(limiter.acquire(1000))
    await settle(limiter, waiting=1)
    behind = asyncio.create_task(limiter.acquire(100))
    await settle(limiter, waiting=2)
    assert not behind.done()
    head.cancel()
    permit = await asyncio.wait_for(behind, 5)
    assert head.cancelled()
    assert limiter.waiting == 0
    permit.release()
    assert limiter.in_flight == 0


async def test_cancelling_a_middle_waiter_keeps_the_order() -> None:
    limiter = Limiter(ModelLimit(max_in_flight=1))
    holder = await limiter.acquire()
    tasks = []
    for i in range(3):
        tasks.append(asyncio.create_task(limiter.acquire()))
        await settle(limiter, waiting=i + 1)
    tasks[1].cancel()
    await asyncio.sleep(0)
    assert limiter.waiting == 2
    holder.release()
    first = await asyncio.wait_for(tasks[0], 5)
    assert not tasks[2].done()
    first.release()
    last = await asyncio.wait_for(tasks[2], 5)
    last.release()
    assert tasks[1].cancelled()
    assert limiter.in_flight == 0
    assert limiter.waiting == 0


async def test_timeout_around_acquire_holds_nothing() -> None:
    limiter = Limiter(ModelLimit(max_in_flight=1))
    holder = await limiter.acquire()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await limiter.acquire()
    assert limiter.waiting == 0
    holder.release()
    assert limiter.in_flight == 0


# --- release ----------------------------------------------------------------------------------


async def test_release_is_idempotent() -> None:
    limiter = Limiter(ModelLimit(max_in_flight=2, tokens_per_minute=60_000), clock=frozen)
    permit = await limiter.acquire(500)  # 500 left
    assert isinstance(permit, Permit)
    assert permit.estimated_tokens == 500
    permit.release(700)  # 200 over: 300 left
    permit.release(700)  # no second charge
    permit.release()
    assert permit.released
    assert limiter.in_flight == 0
    again = await asyncio.wait_for(limiter.acquire(300), 5)  # fits only if charged once
    again.release()
    assert limiter.in_flight == 0


async def test_permit_is_a_context_manager() -> None:
    limiter = Limiter(ModelLimit(max_in_flight=1))
    with await limiter.acquire(5) as permit:
        assert limiter.in_flight == 1
    assert permit.released
    assert limiter.in_flight == 0


async def test_waiting_sleeps_instead_of_polling() -> None:
    calls = 0

    def counting_clock() -> float:
        nonlocal calls
        calls += 1
        return time.monotonic()

    limiter = Limiter(ModelLimit(max_in_flight=1, tokens_per_minute=60_000), clock=counting_clock)
    holder = await limiter.acquire(1000)
    waiter = asyncio.create_task(limiter.acquire(300))  # blocked by the cap, then the bucket
    await asyncio.sleep(0.2)
    assert calls < 10  # asleep until woken, not re-checking
    holder.release()
    permit = await asyncio.wait_for(waiter, 5)
    permit.release()
    assert calls < 20


# --- event loops and threads ------------------------------------------------------------------


def test_one_limiter_serves_two_event_loops_in_threads() -> None:
    limiter = Limiter(ModelLimit(max_in_flight=1))
    guard = threading.Lock()
    running = peak = done = 0
    errors: list[BaseException] = []

    async def worker() -> None:
        nonlocal running, peak, done
        for _ in range(5):
            permit = await limiter.acquire()
            with guard:
                running += 1
                peak = max(peak, running)
            await asyncio.sleep(0.01)
            with guard:
                running -= 1
                done += 1
            permit.release()

    def thread_main() -> None:
        try:
            asyncio.run(worker())
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=thread_main) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    assert done == 10
    assert peak == 1
    assert limiter.in_flight == 0
    assert limiter.waiting == 0


def test_one_limiter_across_successive_asyncio_runs() -> None:
    limiter = Limiter(ModelLimit(max_in_flight=1, requests_per_minute=6000))
    for _ in range(3):
        permit = asyncio.run(limiter.acquire(1))
        permit.release(1)
    assert limiter.in_flight == 0


def test_a_waiter_on_a_closed_loop_is_skipped() -> None:
    limiter = Limiter(ModelLimit(max_in_flight=1))
    holder = asyncio.run(limiter.acquire())
    dead = asyncio.new_event_loop()
    orphan = dead.create_task(limiter.acquire())
    dead.run_until_complete(asyncio.sleep(0.02))
    assert limiter.waiting == 1
    dead.close()  # the orphan can never run again

    async def main() -> None:
        waiter = asyncio.create_task(limiter.acquire())
        await settle(limiter, waiting=2)
        holder.release()
        permit = await asyncio.wait_for(waiter, 5)
        permit.release()

    asyncio.run(main())
    assert limiter.waiting == 0
    assert limiter.in_flight == 0
    # Its loop is gone, so it stays pending; finish its coroutine and keep the exit quiet.
    orphan.get_coro().close()  # type: ignore[union-attr]
    orphan._log_destroy_pending = False  # type: ignore[attr-defined]


def test_set_model_limit_warns_naming_limit_model_and_still_sets() -> None:
    with pytest.deprecated_call(
        match=r"set_model_limit\(\) is deprecated; use swarmcore\.limit_model"
    ):
        limits.set_model_limit("openai/gpt-4o", ModelLimit(max_in_flight=4))
    assert model_limits() == {"openai/gpt-4o": ModelLimit(max_in_flight=4)}
    with pytest.deprecated_call(match="limit_model"):
        limits.set_model_limit("openai/gpt-4o", None)
    assert limiter_for("openai/gpt-4o") is None
    with pytest.deprecated_call(), pytest.raises(UserError, match="ModelLimit or None"):
        limits.set_model_limit("m", 5)  # type: ignore[arg-type]
    with pytest.deprecated_call(), pytest.raises(UserError, match="set_model_limit: model"):
        limits.set_model_limit("  ", ModelLimit(max_in_flight=1))


# --- registry ---------------------------------------------------------------------------------


def test_registry_set_replace_remove_clear() -> None:
    assert limiter_for("openai/gpt-4o") is None
    assert model_limits() == {}

    limit = limit_model("openai/gpt-4o", max_in_flight=4)
    assert limit == ModelLimit(max_in_flight=4)
    first = limiter_for("openai/gpt-4o")
    assert first is not None
    assert first.limit == limit
    assert limiter_for("openai/gpt-4o-mini") is None

    replaced = limit_model("openai/gpt-4o", requests_per_minute=500, tokens_per_minute=1e5)
    assert replaced == ModelLimit(requests_per_minute=500, tokens_per_minute=1e5)
    second = limiter_for("openai/gpt-4o")
    assert second is not None
    assert second is not first
    assert second.limit == replaced

    limit_model("anthropic/claude", max_in_flight=2)
    snapshot = model_limits()
    assert snapshot == {
        "openai/gpt-4o": replaced,
        "anthropic/claude": ModelLimit(max_in_flight=2),
    }
    snapshot.clear()  # a copy: the registry is untouched
    assert len(model_limits()) == 2

    assert limit_model("openai/gpt-4o") == ModelLimit()  # no limit given: removed
    assert limiter_for("openai/gpt-4o") is None
    limit_model("never/set")  # removing what is not there is fine

    clear_model_limits()
    assert model_limits() == {}
    assert limiter_for("anthropic/claude") is None


async def test_registered_limiter_is_shared() -> None:
    limit_model("m", max_in_flight=1)
    limiter = limiter_for("m")
    assert limiter is not None
    assert limiter is limiter_for("m")
    permit = await limiter.acquire()
    assert limiter_for("m") is not None
    assert limiter_for("m").in_flight == 1  # type: ignore[union-attr]
    permit.release()


def test_module_imports_only_the_stdlib_and_errors() -> None:
    # The module is imported on the hot path of every model call: keep it cheap.
    tree = ast.parse(Path(limits.__file__).read_text())
    imported = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    outside = {
        name
        for name in imported
        if name.split(".")[0] not in sys.stdlib_module_names and name != "__future__"
    }
    leaves = {"swarmcore.errors", "swarmcore._checks", "swarmcore._deprecation"}
    assert outside <= leaves  # each a stdlib-only leaf
