"""Evals: every stored run becomes a regression test, replayed offline and checked.

```python
from swarmcore.evals import Suite, case_from_run

case_from_run("runs.db", run_id, flow=flow).save("evals/")   # or `swarmcore eval add`
report = await Suite.from_dir("evals/").run(flow)            # or `swarmcore eval run`
print(report.table())
```

A :class:`Case` holds a stored run's task, a model cassette and a tool
cassette, and what the run did (a :class:`Trace`). Replaying it runs the
current flow with every agent answered from the cassette, so no request
leaves the process; a request the cassette lacks fails the case and names
the agent and the message where the replay departed. Evaluators (subclass
:class:`Evaluator`) then compare the replay with the recording: the output,
the path (agents, order, branches, tool calls), the budget and the context
each agent was given. A :class:`SuiteReport` prints as a table, writes JSON
(byte-identical across reruns) and JUnit XML, and diffs against a baseline.
"""

from swarmcore.evals._case import (
    CASE_FORMAT,
    Case,
    CassetteEntry,
    CassetteReply,
    CheckOptions,
    JudgeOptions,
    RecordedCall,
    ToolEntry,
    ToolMatch,
    ToolMode,
    case_from_record,
    case_from_run,
)
from swarmcore.evals._evaluators import (
    Branches,
    Budget,
    Check,
    ContextGiven,
    Evaluator,
    Judge,
    JudgeVerdict,
    Models,
    OutputContains,
    OutputEquals,
    OutputMatches,
    OutputSchema,
    Path,
    Replayed,
    ToolCalls,
    ToolSchemas,
    default_evaluators,
)
from swarmcore.evals._replay import (
    CaseRun,
    Miss,
    ReplayDiverged,
    live_case,
    record_case,
    replay_case,
)
from swarmcore.evals._report import CaseReport, LiveResult, SuiteReport, Thresholds
from swarmcore.evals._suite import Suite
from swarmcore.evals._trace import AgentTrace, DecisionTrace, ToolUse, Trace, WallTimes, trace_of

__all__ = [
    "CASE_FORMAT",
    "AgentTrace",
    "Branches",
    "Budget",
    "Case",
    "CaseReport",
    "CaseRun",
    "CassetteEntry",
    "CassetteReply",
    "Check",
    "CheckOptions",
    "ContextGiven",
    "DecisionTrace",
    "Evaluator",
    "Judge",
    "JudgeOptions",
    "JudgeVerdict",
    "LiveResult",
    "Miss",
    "Models",
    "OutputContains",
    "OutputEquals",
    "OutputMatches",
    "OutputSchema",
    "Path",
    "RecordedCall",
    "ReplayDiverged",
    "Replayed",
    "Suite",
    "SuiteReport",
    "Thresholds",
    "ToolCalls",
    "ToolEntry",
    "ToolMatch",
    "ToolMode",
    "ToolSchemas",
    "ToolUse",
    "Trace",
    "WallTimes",
    "case_from_record",
    "case_from_run",
    "default_evaluators",
    "live_case",
    "record_case",
    "replay_case",
    "trace_of",
]
