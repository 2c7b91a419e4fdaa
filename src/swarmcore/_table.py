"""Plain-text tables: the one layout every table swarmcore prints shares.

``SwarmResult.usage_table()``, ``DryRunReport.table()`` and the CLI's
``runs list`` and ``runs show`` draw their columns with :func:`text_table`, so
they line up the same way.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence


def text_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    right: Collection[int],
    rule_before_last: bool = False,
) -> str:
    """Columns two spaces apart: the header, a rule of dashes, then the rows.

    Args:
        header: The column titles.
        rows: The cells, one sequence per row, as many as ``header`` has.
        right: Indexes of the columns to right-align (numbers); the rest are
            left-aligned.
        rule_before_last: Draw a second rule above the last row (a total).

    Returns:
        The table, lines joined by newlines, trailing spaces stripped.
    """
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        cells = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * width for width in widths)
    body = [line(row) for row in rows]
    if rule_before_last and body:
        body.insert(len(body) - 1, rule)
    return "\n".join([line(header), rule, *body])
