"""A suite: the cases of a directory, replayed one by one against a flow into a report."""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Sequence
from pathlib import Path

from swarmcore._flow import Flow
from swarmcore._swarm import Swarm
from swarmcore.agent import Agent, run_sync
from swarmcore.errors import UserError
from swarmcore.evals._case import Case
from swarmcore.evals._evaluators import Check, Evaluator, default_evaluators
from swarmcore.evals._replay import CaseRun, Clock, live_case, record_case, replay_case
from swarmcore.evals._report import CaseReport, LiveResult, SuiteReport


class Suite:
    """Cases replayed together: ``await Suite.from_dir("evals").run(flow)`` is a report.

    Args:
        cases: The cases (their names must differ).
        name: The suite's name in reports.
        evaluators: Evaluators run on every case beside each case's defaults.

    Raises:
        UserError: Two cases share a name.
    """

    def __init__(
        self, cases: Sequence[Case], *, name: str = "suite", evaluators: Sequence[Evaluator] = ()
    ) -> None:
        names = [c.name for c in cases]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise UserError(
                f"Suite {name!r}: case names must differ; repeated: {', '.join(twice)}."
            )
        self.cases = sorted(cases, key=lambda c: c.name)
        self.name = name
        self.evaluators = list(evaluators)

    @classmethod
    def from_dir(
        cls, directory: str | os.PathLike[str], *, evaluators: Sequence[Evaluator] = ()
    ) -> Suite:
        """Every ``*.json`` case in ``directory``, named after the directory.

        Raises:
            UserError: ``directory`` is not a directory, or a file in it is not a case.
        """
        folder = Path(directory)
        if not folder.is_dir():
            raise UserError(
                f"No suite directory {folder}; make one with `swarmcore eval add RUN_ID "
                f"--suite {folder}`."
            )
        cases = [Case.load(path) for path in sorted(folder.glob("*.json"))]
        return cls(cases, name=folder.resolve().name, evaluators=evaluators)

    def __len__(self) -> int:
        return len(self.cases)

    async def run_case(
        self, case: Case, target: Flow | Agent | Swarm
    ) -> tuple[CaseReport, CaseRun]:
        """Replay one case against ``target`` and judge it: its report and the replay."""
        replay = await replay_case(case, target)
        checks = await self._checks(case, replay)
        report = CaseReport(
            name=case.name,
            flow_version=case.flow_version,
            checks=checks,
            tokens=replay.trace.tokens,
            calls=replay.trace.calls,
            cost=replay.trace.cost,
        )
        return report, replay

    async def check(self, case: Case, target: Flow | Agent | Swarm) -> CaseReport:
        """Replay ``case`` against ``target``; raise AssertionError naming each failed check.

        One pytest test per case:

        ```python
        suite = Suite.from_dir("evals")

        @pytest.mark.parametrize("case", suite.cases, ids=lambda case: case.name)
        async def test_eval(case):
            await suite.check(case, flow)
        ```

        Raises:
            AssertionError: A check failed; the message lists ``check: what differs``.
        """
        report, _ = await self.run_case(case, target)
        if not report.passed:
            lines = "\n".join(f"  {c.name}: {c.detail}" for c in report.failed)
            raise AssertionError(f"eval case {case.name!r} failed:\n{lines}")
        return report

    async def run_live(
        self, target: Flow | Agent | Swarm, *, trials: int = 1, clock: Clock = time.perf_counter
    ) -> SuiteReport:
        """Run every case's task against ``target`` for real, ``trials`` times each, and judge it.

        Models and tools are the target's own: nothing comes from the cassettes,
        and the runs cost what they cost. A check passes when it passed in every
        trial; each case reports its passes, pass rate and 95 % interval, and its
        wall time (the mean over its trials, measured on ``clock``), which
        ``budget`` checks against the recorded one.

        Raises:
            UserError: ``trials`` is not a whole number above 0.
        """
        if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise UserError(f"trials must be a whole number above 0, got {trials!r}.")
        reports: list[CaseReport] = []
        for case in self.cases:
            runs = [await live_case(case, target, clock=clock) for _ in range(trials)]
            verdicts = [await self._checks(case, run) for run in runs]
            reports.append(self._judged(case, verdicts, runs))
        return SuiteReport(suite=self.name, cases=reports)

    async def record(
        self, target: Flow | Agent | Swarm, directory: str | os.PathLike[str] | None = None
    ) -> Suite:
        """Every case recorded again from a live run of ``target`` (``--record``).

        Each case keeps its name, ``checks`` and ``tool_modes``; its cassettes and
        expectations are the new run's. With ``directory``, each is saved there.

        Returns:
            The suite of the recorded cases, with this suite's name and evaluators.
        """
        fresh = [await self._recorded(case, target) for case in self.cases]
        if directory is not None:
            for case in fresh:
                case.save(directory)
        return Suite(fresh, name=self.name, evaluators=self.evaluators)

    async def _checks(self, case: Case, run: CaseRun) -> list[Check]:
        """Every evaluator's verdict on ``run``: the case's defaults, then the suite's."""
        checks: list[Check] = []
        for evaluator in [*default_evaluators(case), *self.evaluators]:
            check = evaluator.evaluate(run)
            checks.append(await check if inspect.isawaitable(check) else check)
        return checks

    async def _recorded(self, case: Case, target: Flow | Agent | Swarm) -> Case:
        """``case`` recorded again, with its judges' rulings on the new output."""
        fresh = await record_case(case, target)
        replay = await replay_case(fresh, target)
        replay.judge_live = True
        await self._checks(fresh, replay)
        return fresh.model_copy(update={"judge_cassette": replay.judged})

    def _judged(self, case: Case, verdicts: list[list[Check]], runs: list[CaseRun]) -> CaseReport:
        checks: list[Check] = []
        for i, first in enumerate(verdicts[0]):
            failed = [v[i] for v in verdicts if not v[i].passed]
            if not failed:
                checks.append(first.model_copy(update={"passed": True, "detail": ""}))
                continue
            detail = f"{failed[0].detail} (failed in {len(failed)} of {len(runs)} trials)"
            checks.append(first.model_copy(update={"passed": False, "detail": detail}))
        costs = [r.trace.cost for r in runs]
        times = [r.trace.wall_seconds for r in runs]
        return CaseReport(
            name=case.name,
            flow_version=case.flow_version,
            checks=checks,
            tokens=round(sum(r.trace.tokens for r in runs) / len(runs)),
            calls=round(sum(r.trace.calls for r in runs) / len(runs)),
            cost=None
            if any(c is None for c in costs)
            else sum(c or 0.0 for c in costs) / len(runs),
            wall_seconds=None
            if any(t is None for t in times)
            else round(sum(t or 0.0 for t in times) / len(runs), 3),
            live=LiveResult(
                trials=len(runs), passes=sum(all(c.passed for c in v) for v in verdicts)
            ),
        )

    async def run(self, target: Flow | Agent | Swarm) -> SuiteReport:
        """Replay every case against ``target`` (a Flow, Agent or Swarm), offline.

        Returns:
            The report: each case's checks and spend, in case-name order.
        """
        reports = [(await self.run_case(case, target))[0] for case in self.cases]
        return SuiteReport(suite=self.name, cases=reports)

    def run_sync(self, target: Flow | Agent | Swarm) -> SuiteReport:
        """:meth:`run` from synchronous code."""
        return run_sync(lambda: self.run(target))
