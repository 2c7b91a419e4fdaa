"""The agent card a served flow publishes: its name, interfaces (A2A 1.0 and 0.3) and skills."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_CURRENT

from swarmcore.errors import UserError

if TYPE_CHECKING:
    from swarmcore._swarm import Swarm


def agent_card(
    swarm: Swarm,
    *,
    name: str | None = None,
    description: str | None = None,
    skills: Sequence[AgentSkill | Mapping[str, Any]] | None = None,
    url: str | None = None,
) -> AgentCard:
    """The agent card :func:`to_a2a` publishes (without its security scheme)."""
    expression = swarm.flow.expression()
    about = description or f"A swarmcore flow: {expression}."
    if skills is None:
        skills = [
            AgentSkill(
                id="run",
                name=name or expression,
                description=about,
                tags=["swarmcore", *swarm.flow.names],
            )
        ]
    modes = ["text/plain", "application/json"]
    try:
        version_ = version("swarmcore")
    except Exception:  # not installed (a source checkout on sys.path)
        version_ = "0"
    return AgentCard(
        name=name or expression,
        description=about,
        version=version_,
        supported_interfaces=[
            AgentInterface(
                url=url or "http://127.0.0.1/",  # each card request gets its own address
                protocol_binding="JSONRPC",
                protocol_version=protocol,
            )
            for protocol in (PROTOCOL_VERSION_CURRENT, PROTOCOL_VERSION_0_3)
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=modes,
        default_output_modes=modes,
        skills=[_complete(_skill(s), modes, ["swarmcore", *swarm.flow.names]) for s in skills],
    )


def _complete(skill: AgentSkill, modes: list[str], tags: list[str]) -> AgentSkill:
    """``skill``, with the card's modes and the flow's tags where it names none.

    The protocol requires a skill's tags, and clients such as FastA2A's refuse a
    card whose skills do not say what they take and give.
    """
    if skill.input_modes and skill.output_modes and skill.tags:
        return skill
    filled = AgentSkill()
    filled.CopyFrom(skill)
    if not filled.tags:
        filled.tags.extend(tags)
    if not filled.input_modes:
        filled.input_modes.extend(modes)
    if not filled.output_modes:
        filled.output_modes.extend(modes)
    return filled


def _skill(skill: object) -> AgentSkill:
    if isinstance(skill, AgentSkill):
        return skill
    if isinstance(skill, Mapping):
        try:
            return AgentSkill(**{str(k): v for k, v in skill.items()})  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType] -- any mapping
        except (TypeError, ValueError) as error:
            raise UserError(
                f"A skill's fields are id, name, description, tags...: {error}"
            ) from None
    raise UserError(
        f"skills takes AgentSkill objects or mappings of their fields, got {type(skill).__name__}."
    )
