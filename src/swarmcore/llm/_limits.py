"""Per-model concurrency and rate limits, shared by everything in the process.

A 500-agent fan-out should queue, not trip the provider's rate limit. Each model
with a limit has one ``Limiter`` in a process-global registry; the model seam
looks it up with ``limiter_for(model)`` (a plain dict get) and holds a ``Permit``
around each attempt. A limiter combines three gates, all of which must pass:

* ``max_in_flight``: a counting semaphore;
* ``requests_per_minute``: a token bucket holding about one second's worth of
  requests (at least one), refilled evenly, so bursts stay small while the full
  rate is still reached over a minute;
* ``tokens_per_minute``: a token bucket of about one second's worth of tokens.
  The caller's estimate is charged up front and the difference settled on
  release; the bucket may go into debt, which later requests wait out.

Waiters are served strictly first in, first out, and only the head of the queue
is ever awake: it sleeps until a release wakes it or until its buckets will have
refilled. Nothing is bound to an event loop (no ``asyncio.Lock`` or
``Semaphore``): state sits under a threading lock and the head is woken with
``call_soon_threadsafe`` on its own loop, so one limiter serves repeated and
concurrent ``asyncio.run`` calls in any thread.

An engine that runs many processes over one database (a durable engine) holds
the limits across all of them too: its runs' scope (``RunScope.shared_limits``)
carries a :class:`SharedLimits`, and the model seam takes a
:func:`shared_permit` from it inside the local permit. Without one (the
default) nothing is shared.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

from swarmcore._checks import check_number
from swarmcore._deprecation import warn_deprecated
from swarmcore.errors import UserError

# Float slack: a bucket refilled to within this of the need counts as enough.
_EPSILON = 1e-9
# Shortest timer a waiter arms, so rounding can never make it spin.
_MIN_SLEEP = 0.001


@dataclass(frozen=True, slots=True)
class ModelLimit:
    """How hard one model may be driven; every field is optional.

    In one process every field holds for the process. Under an engine that
    shares limits (a durable engine), ``max_in_flight`` and
    ``requests_per_minute`` hold for all its processes together, while
    ``max_in_flight_per_worker`` and ``tokens_per_minute`` hold per process.

    Attributes:
        max_in_flight: The most requests to the model running at once.
        requests_per_minute: Requests started per minute, paced evenly with a
            burst of about one second's worth (at least one request).
        tokens_per_minute: Tokens per minute, charged from each request's
            estimate when it starts and corrected by its actual count when it
            ends; the burst is about one second's worth.
        max_in_flight_per_worker: The most requests to the model running at
            once in one process (one worker), whatever ``max_in_flight`` allows.
    """

    max_in_flight: int | None = None
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    max_in_flight_per_worker: int | None = None

    def __post_init__(self) -> None:
        _check_limit("max_in_flight", self.max_in_flight, integer=True, example="8")
        _check_limit(
            "max_in_flight_per_worker", self.max_in_flight_per_worker, integer=True, example="4"
        )
        _check_limit("requests_per_minute", self.requests_per_minute, integer=False, example="500")
        _check_limit("tokens_per_minute", self.tokens_per_minute, integer=False, example="200_000")


def _check_limit(name: str, value: object, *, integer: bool, example: str) -> None:
    hint = f" Pass e.g. {name}={example}."
    check_number("ModelLimit", name, value, whole=integer, none="no limit", hint=hint)


def _is_token_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class _Bucket:
    """A token bucket that may go into debt; holds about one second's worth."""

    def __init__(self, per_minute: float, now: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(self.rate, 1.0)
        self.level = self.capacity
        self.stamp = now

    def refill(self, now: float) -> None:
        if now > self.stamp:
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
            self.stamp = now

    def seconds_until(self, need: float, now: float) -> float:
        # Asking for at most the capacity lets an oversized request go once full.
        self.refill(now)
        short = min(need, self.capacity) - self.level
        return 0.0 if short <= _EPSILON else short / self.rate

    def charge(self, amount: float, now: float) -> None:
        self.refill(now)
        self.level = min(self.capacity, self.level - amount)


class _Waiter:
    """One ``acquire`` call queued for its turn."""

    def __init__(self, loop: asyncio.AbstractEventLoop, estimate: int) -> None:
        self.loop = loop
        self.estimate = estimate
        # None until the waiter has checked the state and is about to sleep.
        self.future: asyncio.Future[None] | None = None


def _resolve(future: asyncio.Future[None]) -> None:
    # Runs on the waiter's loop; a cancelled or already woken waiter is left alone.
    if not future.done():
        future.set_result(None)


async def _sleep_on(future: asyncio.Future[None], delay: float | None) -> None:
    timer = None
    if delay is not None:
        timer = future.get_loop().call_later(max(delay, _MIN_SLEEP), _resolve, future)
    try:
        await future
    finally:
        if timer is not None:
            timer.cancel()


class Permit:
    """The right to make one model request; give it back with ``release``.

    Also a context manager (``with await limiter.acquire(n):``) that releases
    with the estimate standing as the actual count.
    """

    def __init__(
        self,
        lock: threading.RLock,
        settle: Callable[[int, int | None], None],
        estimate: int,
    ) -> None:
        self._lock = lock
        self._settle = settle
        self._estimate = estimate
        self._released = False

    @property
    def estimated_tokens(self) -> int:
        """The token estimate charged when the permit was granted."""
        return self._estimate

    @property
    def released(self) -> bool:
        """Whether ``release`` has been called."""
        return self._released

    def release(self, actual_tokens: int | None = None) -> None:
        """Give the permit back and wake the next waiter; later calls do nothing.

        Args:
            actual_tokens: The tokens the request really used (prompt plus
                completion), to settle the tokens-per-minute budget: any excess
                over the estimate is charged, any shortfall refunded. None keeps
                the estimate.

        Raises:
            UserError: If actual_tokens is not a whole number of 0 or more. The
                permit is released anyway, with the estimate standing.
        """
        valid = actual_tokens is None or _is_token_count(actual_tokens)
        with self._lock:
            if not self._released:
                self._released = True
                self._settle(self._estimate, actual_tokens if valid else None)
        if not valid:
            raise UserError(
                f"Permit.release: actual_tokens must be a whole number of 0 or more, or None, "
                f"got {actual_tokens!r}; pass the request's total token count."
            )

    def __enter__(self) -> Permit:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self._released else "held"
        return f"<Permit estimated_tokens={self._estimate} {state}>"


class Limiter:
    """Admits requests to one model within a ``ModelLimit``, first come first served.

    Safe to share across tasks, event loops and threads.

    Args:
        limit: The limits to enforce.
        clock: Seconds on a monotonic clock; the buckets refill by it. Must tick
            like the event loops' clocks (the default) for sleeping waiters to
            wake on time.
    """

    def __init__(self, limit: ModelLimit, *, clock: Callable[[], float] = time.monotonic) -> None:
        if not isinstance(limit, ModelLimit):
            raise UserError(
                f"Limiter: limit must be a ModelLimit, got {limit!r}; "
                "pass e.g. ModelLimit(max_in_flight=8)."
            )
        self._limit = limit
        self._clock = clock
        # Reentrant so that a waiter's cleanup, run by the garbage collector
        # while this thread holds the lock, cannot deadlock.
        self._lock = threading.RLock()
        self._queue: deque[_Waiter] = deque()
        self._in_flight = 0
        now = clock()
        rpm, tpm = limit.requests_per_minute, limit.tokens_per_minute
        self._requests = None if rpm is None else _Bucket(rpm, now)
        self._tokens = None if tpm is None else _Bucket(tpm, now)

    @property
    def limit(self) -> ModelLimit:
        """The limits this limiter enforces."""
        return self._limit

    @property
    def in_flight(self) -> int:
        """How many permits are held now."""
        return self._in_flight

    @property
    def waiting(self) -> int:
        """How many ``acquire`` calls are queued now."""
        return len(self._queue)

    async def acquire(self, estimated_tokens: int = 0) -> Permit:
        """Wait for a turn within the limits and take it.

        Callers are served in arrival order. Cancelling a waiting call leaves
        the queue, holds nothing, and passes the turn on.

        Args:
            estimated_tokens: The tokens the request is expected to use, charged
                against tokens_per_minute now and settled by ``Permit.release``.

        Returns:
            The permit; call its ``release`` when the request has finished.

        Raises:
            UserError: If estimated_tokens is not a whole number of 0 or more.
        """
        if not _is_token_count(estimated_tokens):
            raise UserError(
                f"Limiter.acquire: estimated_tokens must be a whole number of 0 or more, "
                f"got {estimated_tokens!r}; pass an estimate such as the prompt's length / 4."
            )
        loop = asyncio.get_running_loop()
        with self._lock:
            if not self._queue and self._delay(estimated_tokens) == 0.0:
                return self._admit(estimated_tokens)
            waiter = _Waiter(loop, estimated_tokens)
            self._queue.append(waiter)
        admitted = False
        try:
            while True:
                with self._lock:
                    delay: float | None = None  # None: sleep until woken
                    if self._queue[0] is waiter:
                        delay = self._delay(estimated_tokens)
                        if delay == 0.0:
                            self._queue.popleft()
                            admitted = True
                            permit = self._admit(estimated_tokens)
                            self._wake_head()  # the next one may fit too
                            return permit
                    # Armed under the lock, so a wake-up cannot fall between
                    # the check above and the sleep below.
                    waiter.future = loop.create_future()
                await _sleep_on(waiter.future, delay)
        finally:
            if not admitted:
                with self._lock:
                    self._leave(waiter)

    def _delay(self, estimate: int) -> float | None:
        """Seconds until `estimate` may start, or None while the in-flight cap is full."""
        caps = (self._limit.max_in_flight, self._limit.max_in_flight_per_worker)
        cap = min((c for c in caps if c is not None), default=None)
        if cap is not None and self._in_flight >= cap:
            return None
        now = self._clock()
        delay = 0.0
        if self._requests is not None:
            delay = self._requests.seconds_until(1.0, now)
        if self._tokens is not None:
            delay = max(delay, self._tokens.seconds_until(estimate, now))
        return delay

    def _admit(self, estimate: int) -> Permit:
        self._in_flight += 1
        if self._requests is not None:
            self._requests.level -= 1.0
        if self._tokens is not None:
            self._tokens.level -= estimate
        return Permit(self._lock, self._settle, estimate)

    def _settle(self, estimate: int, actual: int | None) -> None:
        """Take back a permit; the caller holds the lock."""
        self._in_flight -= 1
        if self._tokens is not None and actual is not None and actual != estimate:
            self._tokens.charge(actual - estimate, self._clock())
        self._wake_head()

    def _leave(self, waiter: _Waiter) -> None:
        """Drop a waiter that gave up; the caller holds the lock."""
        if waiter not in self._queue:
            return
        was_head = self._queue[0] is waiter
        self._queue.remove(waiter)
        if was_head:
            self._wake_head()

    def _wake_head(self) -> None:
        """Ask the head waiter to re-check; the caller holds the lock."""
        while self._queue:
            head = self._queue[0]
            future = head.future
            if future is None or future.done():
                return  # it has not gone to sleep yet, or is already awake
            try:
                head.loop.call_soon_threadsafe(_resolve, future)
                return
            except RuntimeError:
                # Its loop is closed, so it can never run again: skip it.
                if self._queue and self._queue[0] is head:
                    self._queue.popleft()

    def __repr__(self) -> str:
        return f"<Limiter {self._limit!r} in_flight={self._in_flight} waiting={len(self._queue)}>"


# Copy-on-write: writers swap in a new dict under the lock, so readers need no
# lock and never see a dict change under them.
_registry_lock = threading.Lock()
_limiters: dict[str, Limiter] = {}


def limit_model(
    model: str,
    *,
    max_in_flight: int | None = None,
    requests_per_minute: float | None = None,
    tokens_per_minute: float | None = None,
    max_in_flight_per_worker: int | None = None,
) -> ModelLimit:
    """Limit every call to a model made anywhere in this process.

    The one setter of model limits. A fresh limiter replaces any existing one
    for the model; permits already granted by the old one are not counted by
    the new one. With no limit given (every value None: no limit on any axis),
    the model's limit is removed. Under a durable engine that shares them
    ``max_in_flight`` and ``requests_per_minute`` hold across every worker
    sharing its database (see ``ModelLimit``).

    Args:
        model: The LiteLLM model string, exactly as agents name it.
        max_in_flight: The most requests to the model running at once.
        requests_per_minute: Requests started per minute.
        tokens_per_minute: Tokens used per minute (per process).
        max_in_flight_per_worker: The most requests running at once in one process.

    Returns:
        The limit now in force (``ModelLimit()``, limiting nothing, once removed).

    Raises:
        UserError: If a value is not a positive number or None, or model is
            not a non-empty string.
    """
    limit = ModelLimit(
        max_in_flight=max_in_flight,
        requests_per_minute=requests_per_minute,
        tokens_per_minute=tokens_per_minute,
        max_in_flight_per_worker=max_in_flight_per_worker,
    )
    _install("limit_model", model, None if limit == ModelLimit() else limit)
    return limit


def set_model_limit(model: str, limit: ModelLimit | None) -> None:
    """Deprecated: use :func:`limit_model`, the one setter of model limits.

    ``set_model_limit(model, ModelLimit(...))`` is ``limit_model(model, ...)``
    with the same fields; ``set_model_limit(model, None)`` is ``limit_model(model)``.

    Raises:
        UserError: If model is not a non-empty string or limit is not a
            ModelLimit or None.
    """
    warn_deprecated(
        "set_model_limit() is deprecated; use swarmcore.limit_model(model, max_in_flight=..., "
        "requests_per_minute=..., ...), and limit_model(model) with no limits to remove one."
    )
    if limit is not None and not isinstance(limit, ModelLimit):
        raise UserError(
            f"set_model_limit: limit must be a ModelLimit or None, got {limit!r}; "
            "pass e.g. ModelLimit(max_in_flight=8), or None to remove the limit."
        )
    _install("set_model_limit", model, limit)


def _install(setter: str, model: str, limit: ModelLimit | None) -> None:
    """Put a fresh limiter for ``model`` in the registry, or take its limiter out (None)."""
    global _limiters
    if not isinstance(model, str) or not model.strip():
        raise UserError(
            f"{setter}: model must be a LiteLLM model string such as 'openai/gpt-4o', "
            f"got {model!r}."
        )
    with _registry_lock:
        limiters = dict(_limiters)
        if limit is None:
            limiters.pop(model, None)
        else:
            limiters[model] = Limiter(limit)
        _limiters = limiters


def model_limits() -> dict[str, ModelLimit]:
    """Return a copy of the limits set, by model."""
    return {model: limiter.limit for model, limiter in _limiters.items()}


def clear_model_limits() -> None:
    """Remove every model limit."""
    global _limiters
    with _registry_lock:
        _limiters = {}


def limiter_for(model: str) -> Limiter | None:
    """Return the limiter for a model, or None when it has no limit."""
    return _limiters.get(model)


class SharedPermit(Protocol):
    """A permit held across processes; ``release`` gives it back."""

    async def release(self) -> None:
        """Give the permit back; a second call does nothing."""
        ...


class SharedLimits(Protocol):
    """Limits held across processes: a durable engine's, carried by its runs' ``RunScope``."""

    async def acquire(self, model: str, limit: ModelLimit, hold: float | None) -> SharedPermit:
        """Wait for a turn within ``limit`` across every process sharing it, and take it.

        Args:
            model: The model to be called.
            limit: Its limit, as set in this process.
            hold: The longest the call may take (its ``call_timeout``; None: no
                bound), after which a permit whose holder vanished is given back.
        """
        ...


@contextlib.asynccontextmanager
async def shared_permit(
    model: str, limit: ModelLimit, hold: float | None, shared: SharedLimits | None
) -> AsyncGenerator[None]:
    """Hold a shared permit for ``model`` around the block, when limits are shared.

    Args:
        model: The model to be called.
        limit: Its limit, as set in this process.
        hold: The longest the call may take (None: no bound).
        shared: The run's limits across processes; None: limits hold per process.
    """
    if shared is None:
        yield
        return
    permit = await shared.acquire(model, limit, hold)
    try:
        yield
    finally:
        await asyncio.shield(permit.release())
