"""The viewer's eval pages: a suite's cases beside the runs, with the last report's verdicts.

``swarmcore ui --suite DIR --eval-report REPORT.json`` adds two pages: ``/evals``
lists the suite's cases, each with its result in the report (or "not run"),
and ``/evals/NAME`` shows one case: its task and flow, every check's verdict,
the first divergence when its replay departed from the recording, and what the
recording expects (steps, decisions, agents). Both are read again on every
request, so a new ``swarmcore eval run --report`` shows on reload.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from swarmcore.evals import Case, CaseReport, Check, Suite, SuiteReport
from swarmcore.results import format_cost


@dataclass(frozen=True)
class EvalSource:
    """Where the eval pages read: the suite's directory and its last report (optional)."""

    suite: Path
    report: Path | None = None

    def read(self) -> tuple[Suite, SuiteReport | None]:
        """The suite and the report, as they are now (no report while it is missing).

        Raises:
            UserError: The suite or the report cannot be read.
        """
        suite = Suite.from_dir(self.suite)
        if self.report is None or not self.report.exists():
            return suite, None
        return suite, SuiteReport.load(self.report)


@dataclass(frozen=True)
class CaseRow:
    """One line of the evals page."""

    name: str
    task: str
    flow: str
    result: str
    """``pass``, ``fail`` or ``not run`` (the report does not hold the case)."""
    failed: str
    tokens: str
    cost: str


def case_rows(suite: Suite, report: SuiteReport | None) -> list[CaseRow]:
    """The evals page's rows: every case of ``suite`` with its verdict in ``report``."""
    reports = {c.name: c for c in report.cases} if report else {}
    rows: list[CaseRow] = []
    for case in suite.cases:
        found = reports.get(case.name)
        rows.append(
            CaseRow(
                name=case.name,
                task=case.task,
                flow=case.flow,
                result=_result(found),
                failed=", ".join(c.name for c in found.failed) if found else "",
                tokens=f"{found.tokens:,}" if found else "",
                cost=format_cost(found.cost) if found else "",
            )
        )
    return rows


@dataclass(frozen=True)
class CaseView:
    """One case's page."""

    case: Case
    result: str
    checks: list[Check]
    divergence: str | None
    """The replay check's account of where the replay departed, if it did."""


def case_view(suite: Suite, report: SuiteReport | None, name: str) -> CaseView | None:
    """The page of the case named ``name``, or None when the suite has no such case."""
    case = next((c for c in suite.cases if c.name == name), None)
    if case is None:
        return None
    found = next((c for c in report.cases if c.name == name), None) if report else None
    checks = found.checks if found else []
    replay = next((c for c in checks if c.name == "replay" and not c.passed), None)
    return CaseView(
        case=case,
        result=_result(found),
        checks=checks,
        divergence=replay.detail if replay else None,
    )


def _result(found: CaseReport | None) -> str:
    if found is None:
        return "not run"
    return "pass" if found.passed else "fail"
