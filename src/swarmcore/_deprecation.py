"""One way to say a spelling is deprecated: a DeprecationWarning pointed at the user's line.

Python's default filter shows a DeprecationWarning only when it is attributed to
``__main__``, so the warning names the first frame outside swarmcore (the
user's ``Agent(...)``, say), never one of ours. Test runners show it wherever it
is attributed.
"""

from __future__ import annotations

import inspect
import warnings


def warn_deprecated(message: str) -> None:
    """Warn that a spelling is deprecated; ``message`` names the one to use instead."""
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    level = 2  # 1 is this function; 2 its caller
    while caller is not None and _ours(caller.f_globals.get("__name__")):
        caller, level = caller.f_back, level + 1
    del frame, caller  # frames hold their locals alive
    warnings.warn(message, DeprecationWarning, stacklevel=level)


def _ours(module: object) -> bool:
    return isinstance(module, str) and (module == "swarmcore" or module.startswith("swarmcore."))
