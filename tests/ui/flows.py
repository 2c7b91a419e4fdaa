"""A flow for the viewer's tests that the swarmcore command runs and resumes.

``flaky``'s second agent fails until the file named by ``SWARMCORE_UI_HEALED``
exists: a run of it fails, and resuming it (once the file is there) succeeds.
"""

from __future__ import annotations

import os
from pathlib import Path

from swarmcore import Agent
from swarmcore.testing import Fail, FunctionModel, RecordedRequest, Reply

HEALED = "SWARMCORE_UI_HEALED"


def _answer(request: RecordedRequest) -> Reply | Fail:
    who = request.system.split()[0]
    healed = Path(os.environ.get(HEALED) or "/nonexistent/swarmcore-ui-healed")
    if who == "broken" and not healed.exists():
        return Fail(400, "the model refused this request")
    return Reply(text=f"{who} output\n<summary>{who} done</summary>")


_model = FunctionModel(_answer)
flaky = Agent("first", "first does its part.", model=_model.model) >> Agent(
    "broken", "broken does its part.", model=_model.model
)
