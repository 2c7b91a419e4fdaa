"""Reports of a suite's replay: a table, JSON, JUnit XML, and the diff against a baseline.

A replay's report holds no times and no paths, and lists cases by name and
checks in evaluator order, so the same suite replayed against the same code
gives the same bytes; a baseline diff can then be trusted to show what the code
changed. A live run's report (``--live``) adds each case's wall time, which a
baseline diff between live reports compares too.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from xml.etree import ElementTree as ET

from pydantic import BaseModel, ConfigDict, Field, ValidationError, computed_field

from swarmcore._table import text_table
from swarmcore.errors import UserError
from swarmcore.evals._evaluators import Check
from swarmcore.results import format_cost, sum_cost

REPORT_FORMAT = 1


class LiveResult(BaseModel):
    """How a case fared over live trials (``swarmcore eval run --live N``)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    trials: int = Field(ge=1)
    passes: int = Field(ge=0)
    """Trials in which every check passed."""

    @computed_field
    @property
    def pass_rate(self) -> float:
        """Passes over trials."""
        return round(self.passes / self.trials, 6)

    @computed_field
    @property
    def interval(self) -> tuple[float, float]:
        """The pass rate's 95 % confidence interval (Wilson score), as (low, high)."""
        return wilson(self.passes, self.trials)


def wilson(passes: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of ``passes`` in ``trials`` (95 % for the default ``z``)."""
    if trials == 0:
        return (0.0, 1.0)
    p = passes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = (
        z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    )
    return (round(max(0.0, centre - half), 6), round(min(1.0, centre + half), 6))


class CaseReport(BaseModel):
    """One case's replay: each check's verdict, and what the replay spent."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    flow_version: str
    """The recorded flow's version (digest of its shape)."""
    checks: list[Check] = Field(default_factory=list[Check])
    tokens: int = 0
    """Tokens the replay spent (a live run's: the mean over its trials)."""
    calls: int = 0
    cost: float | None = None
    live: LiveResult | None = None
    """Over live trials: how many passed; None for a replay."""
    wall_seconds: float | None = None
    """A live run's wall time in seconds (the mean over its trials); None for an
    offline replay, whose time is not a model's."""

    @computed_field
    @property
    def passed(self) -> bool:
        """Whether every check passed."""
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        """The checks that failed."""
        return [c for c in self.checks if not c.passed]


class Thresholds(BaseModel):
    """What counts as a regression against a baseline report."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    pass_rate_drop: float = Field(default=0.0, ge=0)
    """How far (0 to 1) the suite's pass rate may fall."""
    token_ratio: float = Field(default=1.1, gt=0)
    """How many times its baseline tokens a case (and the suite) may spend."""
    cost_ratio: float = Field(default=1.1, gt=0)
    """How many times its baseline cost a case (and the suite) may spend."""
    wall_ratio: float = Field(default=1.5, gt=0)
    """How many times its baseline wall time a case may take (plus ``wall_grace``);
    compared where both reports have times: live runs (``--live``)."""
    wall_grace: float = Field(default=1.0, ge=0)
    """Seconds added to the wall-time limit, so that fast cases' jitter is no regression."""


class SuiteReport(BaseModel):
    """A suite's replay: every case's checks, and the totals."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    swarmcore_eval_report: int = REPORT_FORMAT
    suite: str
    cases: list[CaseReport] = Field(default_factory=list[CaseReport])

    @computed_field
    @property
    def passed(self) -> int:
        """Cases whose every check passed."""
        return sum(c.passed for c in self.cases)

    @computed_field
    @property
    def failed(self) -> int:
        """Cases with a failed check."""
        return len(self.cases) - self.passed

    @computed_field
    @property
    def pass_rate(self) -> float:
        """Passed cases over all cases (1.0 for an empty suite); live: passed trials over all."""
        live = [c.live for c in self.cases if c.live is not None]
        if live:
            return round(sum(t.passes for t in live) / sum(t.trials for t in live), 6)
        return round(self.passed / len(self.cases), 6) if self.cases else 1.0

    @computed_field
    @property
    def tokens(self) -> int:
        """Tokens of every case's replay."""
        return sum(c.tokens for c in self.cases)

    @computed_field
    @property
    def cost(self) -> float | None:
        """USD of every case's replay; None when any is unpriced."""
        return sum_cost([c.cost for c in self.cases])

    def to_json(self) -> str:
        """The report as indented JSON ending in a newline (byte-identical across reruns)."""
        return self.model_dump_json(indent=2) + "\n"

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_json` to ``path``."""
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SuiteReport:
        """A report written by :meth:`save` (``--report``).

        Raises:
            UserError: The file cannot be read or is not such a report.
        """
        where = Path(path)
        try:
            return cls.model_validate_json(where.read_text(encoding="utf-8"))
        except OSError as exc:
            raise UserError(f"Cannot read the report {where}: {exc}.") from exc
        except ValidationError as exc:
            raise UserError(
                f"{where} is not a swarmcore eval report ({exc.error_count()} errors, first: "
                f"{exc.errors()[0]['msg']}); write one with `swarmcore eval run --report`."
            ) from None

    def table(self) -> str:
        """One row per case: passed or which checks failed, tokens, calls, cost; then totals.

        A live run's report adds a ``time`` column: each case's wall time.
        """
        timed = any(c.wall_seconds is not None for c in self.cases)
        rows = [
            (
                c.name,
                _result(c),
                ", ".join(k.name for k in c.failed),
                f"{c.tokens:,}",
                str(c.calls),
                format_cost(c.cost),
                *([_time(c.wall_seconds)] if timed else []),
            )
            for c in self.cases
        ]
        times = [c.wall_seconds for c in self.cases]
        total = None if any(t is None for t in times) else sum(t or 0.0 for t in times)
        rows.append(
            (
                "total",
                f"{self.passed}/{len(self.cases)}",
                "",
                f"{self.tokens:,}",
                str(sum(c.calls for c in self.cases)),
                format_cost(self.cost),
                *([_time(total)] if timed else []),
            )
        )
        header = ("case", "result", "failed checks", "tokens", "calls", "cost")
        header += ("time",) if timed else ()
        right = {3, 4, 5, 6} if timed else {3, 4, 5}
        return text_table(header, rows, right=right, rule_before_last=True)

    def details(self) -> str:
        """Each failed check of each case, one per line: ``case: check: what differs``."""
        return "\n".join(f"{c.name}: {k.name}: {k.detail}" for c in self.cases for k in c.failed)

    def junit(self) -> str:
        """The report as JUnit XML: a testsuite, a testcase per case, a failure per failed check."""
        suite = ET.Element(
            "testsuite",
            name=self.suite,
            tests=str(len(self.cases)),
            failures=str(self.failed),
            errors="0",
            skipped="0",
        )
        for case in self.cases:
            test = ET.SubElement(suite, "testcase", classname=self.suite, name=case.name)
            for check in case.failed:
                failure = ET.SubElement(test, "failure", message=f"{check.name}: {check.detail}")
                failure.text = check.detail
        ET.indent(suite)
        return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"

    def regressions(self, baseline: SuiteReport, thresholds: Thresholds | None = None) -> list[str]:
        """What got worse since ``baseline``: each line names the case (or the suite) and how.

        A case that passed and now fails, or spends more tokens or cost than its
        baseline times the thresholds' ratio, or (both reports live) takes more
        wall time than its baseline's x ``wall_ratio`` + ``wall_grace``; the
        suite's pass rate falling more than ``pass_rate_drop``.
        """
        limits = thresholds or Thresholds()
        before = {c.name: c for c in baseline.cases}
        found: list[str] = []
        for case in self.cases:
            was = before.get(case.name)
            if was is None:
                continue
            if was.passed and not case.passed:
                failed = ", ".join(k.name for k in case.failed)
                found.append(f"{case.name}: passed in the baseline, fails now ({failed})")
            found += _ratio(case.name, "tokens", case.tokens, was.tokens, limits.token_ratio)
            found += _ratio(case.name, "cost", case.cost, was.cost, limits.cost_ratio)
            found += _slower(case.name, case.wall_seconds, was.wall_seconds, limits)
        drop = baseline.pass_rate - self.pass_rate
        if drop > limits.pass_rate_drop + 1e-9:
            found.append(
                f"suite: pass rate {self.pass_rate:.1%}, baseline {baseline.pass_rate:.1%} "
                f"(allowed drop {limits.pass_rate_drop:.1%})"
            )
        return found


def _result(case: CaseReport) -> str:
    if case.live is None:
        return "pass" if case.passed else "FAIL"
    low, high = case.live.interval
    rate = f"{case.live.passes}/{case.live.trials} {case.live.pass_rate:.0%}"
    return f"{rate} (95% CI {low:.0%}-{high:.0%})"


def _time(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f}s"


def _slower(name: str, now: float | None, was: float | None, limits: Thresholds) -> list[str]:
    """A case slower than its baseline x the ratio + the grace (a replay has no times)."""
    if now is None or was is None or now <= was * limits.wall_ratio + limits.wall_grace + 1e-9:
        return []
    ratio = f"x{now / was:.2f}" if was else "from 0"
    return [
        f"{name}: wall time {now:.3f} s, baseline {was:.3f} s ({ratio}, allowed "
        f"x{limits.wall_ratio:g} + {limits.wall_grace:g} s)"
    ]


def _ratio(name: str, what: str, now: float | None, was: float | None, limit: float) -> list[str]:
    if now is None or was is None or now <= was * limit + 1e-12:
        return []
    ratio = f"x{now / was:.2f}" if was else "from 0"
    return [f"{name}: {what} {now:g}, baseline {was:g} ({ratio}, allowed x{limit:g})"]
