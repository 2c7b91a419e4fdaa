"""Agent capabilities in one flow: structured output, an agent as a tool, approval, variables.

Run it with ``uv run python examples/capabilities.py`` (offline without a key).
A lead agent delegates fact-finding to a researcher (``as_tool``), a tool that
writes files asks for approval first, and a judge returns a typed verdict that
later code reads as an object. The audience comes from a prompt variable.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import BaseModel, Field

from swarmcore import Agent, Approval, ApprovalRequest, Swarm, function_tool
from swarmcore.testing import choose_model


class Verdict(BaseModel):
    """The judge's decision."""

    decision: Literal["publish", "revise"]
    reasons: list[str] = Field(min_length=1)


def save_draft(filename: str, text: str) -> str:
    """Save a draft to disk.

    Args:
        filename: Where to save it.
        text: The draft.
    """
    return f"saved {len(text)} characters to {filename}"  # a demo: nothing is written


def approve(request: ApprovalRequest) -> Approval:
    """Allow drafts only under drafts/; anything else is redirected there."""
    filename = str(request.arguments.get("filename", ""))
    print(f"  approval asked: {request.agent_name} -> {request.tool_name}({filename!r})")
    if filename.startswith("drafts/"):
        return Approval.allow()
    return Approval.edit({**request.arguments, "filename": f"drafts/{filename or 'draft.md'}"})


def no_empty_reasons(verdict: Verdict) -> str | None:
    """A validator: its feedback goes back to the model, which tries again."""
    if any(not reason.strip() for reason in verdict.reasons):
        return "every reason must say something"
    return None


def build_swarm(model: str) -> Swarm:
    researcher = Agent("researcher", "You find facts about the topic you are given.", model=model)
    lead = Agent(
        "lead",
        "You write a short article for {audience}. Ask the researcher for facts first.",
        model=model,
        tools=[
            researcher.as_tool(description="Finds facts about a topic"),
            function_tool(save_draft, requires_approval=True),
        ],
    )
    judge = Agent(
        "judge",
        "Decide whether the article is ready to publish.",
        model=model,
        output_type=Verdict,
        output_validators=[no_empty_reasons],
    )
    return Swarm(lead >> judge, approve=approve)


async def main() -> None:
    model, notice = choose_model()
    print(notice)
    result = await build_swarm(model).run(
        "Write about green tea.", variables={"audience": "busy parents"}
    )
    verdict = result["judge"].parsed
    assert isinstance(verdict, Verdict)
    print(f"\nverdict: {verdict.decision} ({'; '.join(verdict.reasons)})")
    lead = result["lead"]
    print(f"lead delegated {len(lead.delegations)} task(s); its tokens include theirs:")
    print(result.usage_table())
    for call in lead.tool_calls:
        print(f"  {call.tool_name}: approval={call.approval} -> {call.result[:60]}")


if __name__ == "__main__":
    asyncio.run(main())
