"""Live progress of a run in the terminal: a hook for ``Swarm(hooks=[...])``.

```python
from swarmcore import Swarm
from swarmcore.console import ConsoleProgress

swarm = Swarm(a >> (b | c) >> d, hooks=[ConsoleProgress()])
```

In a terminal with rich installed (``pip install 'swarmcore[cli]'``) it draws a
live tree of the run's steps and agents (a parallel group's members beneath it,
branches nested) with each one's status, time, tokens and cost, and prints a
summary when the run ends. Anywhere else (a pipe, a log file, CI, no rich) it
writes one plain line per notable event, without colours::

    [  0.0s] run 1a2b3c started: a >> (b | c) >> d
    [  0.4s] a done: 512 tokens, $0.0003, 0.4s
    [  0.4s] b | c started (parallel, all)
    [  1.1s]   c FAILED: ModelError: Agent 'c' failed: ...

rich is imported only when the live display starts, so this package imports
(and the plain mode works) without it. The hook keeps its state per run id
(one instance can watch several runs, one after another or at once) and never
raises: events it does not understand are ignored.

The modules, by concern: ``progress`` (the hook: routing events, plain or
live), ``rows`` (a run's rows and their state), ``skeleton`` (the rows read from
the flow at the start), ``track`` (events moving the rows), ``lines`` (plain
lines and verbosity levels) and ``live`` (the rich tree).
"""

from swarmcore.console._lines import Verbosity
from swarmcore.console._progress import ConsoleProgress

__all__ = ["ConsoleProgress", "Verbosity"]
