"""What a leak check reads of an error or an event: every text it could show."""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from dataclasses import fields

from swarmcore.events import Event


def chain(error: BaseException) -> Iterator[BaseException]:
    """The error and every exception it holds as cause or context, printed or not."""
    seen: list[BaseException] = []
    todo: list[BaseException] = [error]
    while todo:
        exc = todo.pop()
        if any(exc is s for s in seen):
            continue
        seen.append(exc)
        yield exc
        todo.extend(e for e in (exc.__cause__, exc.__context__) if e is not None)


def describe_error(error: BaseException) -> str:
    parts = ["".join(traceback.format_exception(error))]
    for exc in chain(error):
        parts += [str(exc), repr(exc), *map(repr, exc.args), repr(vars(exc))]
    return "\n".join(parts)


def describe_event(event: Event) -> str:
    parts = [repr(event)]
    for f in fields(event):
        value = getattr(event, f.name)
        if isinstance(value, BaseException):
            parts.append(describe_error(value))
    return "\n".join(parts)
