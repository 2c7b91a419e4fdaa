"""Batch runs: one flow over many tasks, a bounded number at a time (``Swarm.map``).

Design:

* **Checked first.** ``concurrency``, the tasks and the variables are checked
  before any run starts, so a typo in task 9,000 fails at once, not after an
  hour of spending. The tasks are materialized into a list, so their number is
  always known.
* **A fixed pool of workers.** ``min(concurrency, len(tasks))`` worker
  coroutines run inside one ``asyncio.TaskGroup`` and pull the next index from
  a shared iterator (the event loop is single-threaded, so ``next()`` needs no
  lock). At most ``concurrency`` runs are ever in flight, and 10,000 tasks
  never mean 10,000 coroutines waiting on a semaphore.
* **Input order.** Each worker writes its outcome into the slot of the index
  it pulled; the list returned follows the input, whatever order runs finish in.
* **Failure isolation.** A run that raises any ``Exception`` (a SwarmError
  with its ``partial`` results, or a bug) fills its own slot with the error;
  the other runs go on. Cancellation is not a failure: cancelling the batch
  cancels every run in flight (the TaskGroup does) and the ``CancelledError``
  propagates; ``KeyboardInterrupt`` and ``SystemExit`` propagate too.
* **Progress.** After each run ends, ``progress`` (sync or async) gets a
  :class:`MapProgress` snapshot. A callback that raises is logged on the
  ``swarmcore.batch`` logger and never stops the batch. Every finished item is
  also logged at DEBUG; nothing is printed.
* **On a durable engine** (:func:`map_tasks`) the same checks run, then every
  task is enqueued as a run of its own for the workers, under the run id its
  ``key`` gives (the engine's ``map``), and the same :class:`Tally` reports them.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from swarmcore._checks import check_number, check_run_id
from swarmcore.agent import normalize_variables
from swarmcore.engines import CanMap
from swarmcore.errors import SwarmError, UserError, first_error

if TYPE_CHECKING:
    from swarmcore._swarm import Swarm
    from swarmcore.engines import Engine
    from swarmcore.models import SwarmResult

logger = logging.getLogger("swarmcore.batch")

RunFn = Callable[[str, "Mapping[str, object] | None"], "Awaitable[SwarmResult]"]
"""Runs one task with its variables: ``Swarm.run`` in a lambda."""


@dataclass(frozen=True, slots=True)
class MapProgress:
    """Where a batch stands, sent to ``progress`` after each run ends.

    Attributes:
        index: The position, in the input, of the task whose run just ended.
        done: Runs ended so far, this one included (succeeded plus failed).
        total: How many tasks the batch has.
        succeeded: Runs that returned a SwarmResult so far.
        failed: Runs that raised so far.
        result: The run's SwarmResult when it succeeded; None when it failed.
        error: The exception the run raised (a SwarmError carries ``partial``
            results); None when it succeeded.
        elapsed_seconds: Wall time since the batch started.
    """

    index: int
    done: int
    total: int
    succeeded: int
    failed: int
    result: SwarmResult | None
    error: BaseException | None
    elapsed_seconds: float

    @property
    def remaining(self) -> int:
        """Runs not yet ended (queued or in flight)."""
        return self.total - self.done


async def run_batch(
    run: RunFn,
    tasks: Iterable[str],
    *,
    concurrency: int,
    variables: Mapping[str, object] | Sequence[Mapping[str, object]] | None,
    progress: Callable[[MapProgress], object] | None,
    check: Callable[[str, Mapping[str, object] | None], object] | None = None,
) -> list[SwarmResult | BaseException]:
    """Run ``run`` once per task, at most ``concurrency`` at a time.

    Args:
        run: Runs one task with its variables and returns its SwarmResult.
        tasks: The inputs, one run each (materialized into a list first).
        concurrency: The most runs in flight at once; a positive int.
        variables: One mapping for every task, or a sequence of mappings with
            exactly one per task, or None.
        progress: Called (sync or async) after each run ends; awaited when it
            returns an awaitable. What it raises is logged, never propagated.
        check: Called with each task and its variables before any run starts,
            to refuse bad input up front (e.g. a missing prompt variable); what
            it raises propagates and nothing runs.

    Returns:
        One entry per task, in input order: its SwarmResult, or the exception
        its run raised.

    Raises:
        UserError: ``concurrency``, ``tasks``, ``variables`` or ``progress`` is
            invalid (nothing has run).
        asyncio.CancelledError: The batch was cancelled; every run in flight
            was cancelled with it.
    """
    todo, per_task = prepare(tasks, concurrency, variables, progress, check)
    if not todo:
        return []
    return await _Batch(run, todo, per_task, progress).run(min(concurrency, len(todo)))


async def map_tasks(
    swarm: Swarm,
    engine: Engine,
    tasks: Iterable[str],
    *,
    concurrency: int,
    variables: Mapping[str, object] | Sequence[Mapping[str, object]] | None,
    progress: Callable[[MapProgress], object] | None,
    key: Callable[[str], str] | Sequence[str] | None,
    check: Callable[[str, Mapping[str, object] | None], object],
) -> list[SwarmResult | BaseException]:
    """``Swarm.map``: a batch in process, or one enqueued run per task on a durable engine."""
    if not isinstance(engine, CanMap):
        if key is not None:
            raise UserError(
                "map(key=...) needs a durable engine, one that declares swarmcore.engines.CanMap: "
                "Swarm(flow, engine=...) (docs/durable-runs.md); in process every task runs "
                "anyway."
            )
        return await run_batch(
            lambda task, values: swarm.run(task, variables=values),
            tasks,
            concurrency=concurrency,
            variables=variables,
            progress=progress,
            check=check,
        )
    todo, per_task = prepare(tasks, concurrency, variables, progress, check)
    ids = run_ids(todo, key)
    return await engine.map(swarm, todo, per_task, ids, Tally(len(todo), progress))


def prepare(
    tasks: Iterable[str],
    concurrency: int,
    variables: Mapping[str, object] | Sequence[Mapping[str, object]] | None,
    progress: Callable[[MapProgress], object] | None,
    check: Callable[[str, Mapping[str, object] | None], object] | None,
) -> tuple[list[str], list[Mapping[str, object] | None]]:
    """The tasks as a list and each one's variables, every input checked (see :func:`run_batch`).

    Raises:
        UserError: An input is invalid (nothing has run).
    """
    _check_concurrency(concurrency)
    todo = _materialize(tasks)
    per_task = _per_task_variables(variables, len(todo))
    if progress is not None and not callable(progress):
        raise UserError(
            f"progress must be a function taking a MapProgress, got {type(progress).__name__}."
        )
    if check is not None:
        for task, values in zip(todo, per_task, strict=True):
            check(task, values)
    return todo, per_task


class Tally:
    """A batch's counts: each run's end is logged and reported to ``progress``.

    Args:
        total: How many tasks the batch has.
        progress: Called (sync or async) after each run ends; what it raises is
            logged, never propagated.
    """

    def __init__(self, total: int, progress: Callable[[MapProgress], object] | None) -> None:
        self.total = total
        self._progress = progress
        self._succeeded = 0
        self._failed = 0
        self._started = time.perf_counter()

    async def ended(self, index: int, outcome: SwarmResult | BaseException, seconds: float) -> None:
        """Count the run of task ``index``, which took ``seconds``, and report it."""
        failed = isinstance(outcome, BaseException)
        if failed:
            self._failed += 1
        else:
            self._succeeded += 1
        self._log(index, outcome, seconds)
        if self._progress is not None:
            await self._report(
                MapProgress(
                    index=index,
                    done=self._succeeded + self._failed,
                    total=self.total,
                    succeeded=self._succeeded,
                    failed=self._failed,
                    result=None if isinstance(outcome, BaseException) else outcome,
                    error=outcome if isinstance(outcome, BaseException) else None,
                    elapsed_seconds=time.perf_counter() - self._started,
                )
            )

    async def _report(self, update: MapProgress) -> None:
        assert self._progress is not None
        try:
            answer = self._progress(update)
            if inspect.isawaitable(answer):
                await answer
        except Exception:
            logger.exception(
                "map progress callback %r raised (item %d); the batch goes on",
                self._progress,
                update.index,
            )

    def _log(self, index: int, outcome: SwarmResult | BaseException, seconds: float) -> None:
        if not logger.isEnabledFor(logging.DEBUG):
            return
        done, total = self._succeeded + self._failed, self.total
        if isinstance(outcome, BaseException):
            partial = outcome.partial if isinstance(outcome, SwarmError) else None
            logger.debug(
                "map item %d failed after %.2fs with %s: %s (%d of %d done)",
                index,
                seconds,
                type(outcome).__name__,
                outcome,
                done,
                total,
                extra={"run_id": partial.run_id if partial is not None else None},
            )
        else:
            logger.debug(
                "map item %d succeeded in %.2fs (%d of %d done)",
                index,
                seconds,
                done,
                total,
                extra={"run_id": outcome.run_id},
            )


class _Batch:
    """The state of one batch: the queue of indices and the outcomes."""

    def __init__(
        self,
        run: RunFn,
        tasks: list[str],
        per_task: list[Mapping[str, object] | None],
        progress: Callable[[MapProgress], object] | None,
    ) -> None:
        self._run = run
        self._tasks = tasks
        self._per_task = per_task
        self._tally = Tally(len(tasks), progress)
        self._next: Iterator[int] = iter(range(len(tasks)))
        self._outcomes: dict[int, SwarmResult | BaseException] = {}

    async def run(self, workers: int) -> list[SwarmResult | BaseException]:
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(workers):
                    group.create_task(self._worker())
        except BaseExceptionGroup as failed:  # only what escapes a worker: surface it unwrapped
            error = first_error(failed)
            raise error from error.__cause__
        return [self._outcomes[i] for i in range(len(self._tasks))]

    async def _worker(self) -> None:
        for index in self._next:  # shared by every worker: each index is taken once
            began = time.perf_counter()
            outcome = await self._run_one(index)
            self._outcomes[index] = outcome
            await self._tally.ended(index, outcome, time.perf_counter() - began)

    async def _run_one(self, index: int) -> SwarmResult | BaseException:
        try:
            return await self._run(self._tasks[index], self._per_task[index])
        except Exception as error:  # one run's failure (or bug) is its own, never the batch's
            return error
        except asyncio.CancelledError as error:
            task = asyncio.current_task()
            if task is None or task.cancelling():
                raise  # the batch is being cancelled: stop
            return error  # raised by the run itself while nobody cancelled the batch


def run_ids(tasks: Sequence[str], key: Callable[[str], str] | Sequence[str] | None) -> list[str]:
    """Each task's run id: ``key(task)``, ``key[i]``, or a new one each (``key=None``).

    Raises:
        UserError: ``key`` gives something that cannot be a run id, or does not
            give one per task.
    """
    if key is None:
        return [uuid.uuid4().hex for _ in tasks]
    if callable(key):
        given: list[object] = [key(task) for task in tasks]
    elif isinstance(key, str | bytes) or not isinstance(key, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
        raise UserError(
            f"key must be a function of the task or a list of run ids, one per task; "
            f"got {type(key).__name__}."
        )
    elif len(key) != len(tasks):
        raise UserError(f"key has {len(key)} run ids but there are {len(tasks)} tasks.")
    else:
        given = list(key)
    for index, run_id in enumerate(given):
        check_run_id(run_id, name=f"key, for task {index}")
    return cast("list[str]", given)


def _check_concurrency(concurrency: object) -> None:
    hint = " It is the most runs in flight at once."
    check_number("map()", "concurrency", concurrency, whole=True, hint=hint)


def _materialize(tasks: Iterable[str]) -> list[str]:
    if isinstance(tasks, str | bytes):
        raise UserError(
            f"map() takes a list of tasks, got one {type(tasks).__name__} ({tasks[:40]!r}); "
            "wrap it in a list: map([task])."
        )
    try:
        items = iter(tasks)
    except TypeError:
        raise UserError(
            f"map() takes a list (or any iterable) of task strings, got {type(tasks).__name__}."
        ) from None
    todo: list[str] = list(items)
    for index, task in enumerate(todo):
        if not isinstance(task, str) or not task.strip():  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(
                f"Task {index} is {task!r}; every task must be a non-empty string. "
                "Remove it or give it text."
            )
    return todo


def _per_task_variables(
    variables: Mapping[str, object] | Sequence[Mapping[str, object]] | None, count: int
) -> list[Mapping[str, object] | None]:
    """One entry per task: the shared mapping (copied once), each task's own, or None."""
    if variables is None:
        return [None] * count
    if isinstance(variables, Mapping):
        shared = normalize_variables(variables)  # checks the names; a snapshot for every run
        return [shared] * count
    if isinstance(variables, str | bytes) or not isinstance(variables, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
        raise UserError(
            "variables must be one dict (used for every task) or a list of dicts, one per "
            f"task; got {type(variables).__name__}."
        )
    if len(variables) != count:
        raise UserError(
            f"variables has {len(variables)} entries but there are {count} tasks; give one "
            "dict per task, or a single dict to use for every task."
        )
    per_task: list[Mapping[str, object] | None] = []
    for index, values in enumerate(variables):
        if not isinstance(values, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(
                f"variables[{index}] is {type(values).__name__}; each entry must be a dict "
                "of name to value."
            )
        try:
            per_task.append(normalize_variables(values))
        except UserError as error:
            raise UserError(f"variables[{index}]: {error}") from None
    return per_task
