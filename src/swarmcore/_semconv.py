"""The names a trace uses: the GenAI semantic conventions' and swarmcore's own.

Attribute names, operation names and the well-known ``gen_ai.provider.name``
values of OpenTelemetry's GenAI semantic conventions (still "Development"),
as our own constants: swarmcore does not depend on the semantic-conventions
package. :mod:`swarmcore.tracing` puts them on spans.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

# --- attribute names (GenAI semantic conventions, plus our own swarmcore.*) ----------

OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
USAGE_REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
AGENT_NAME = "gen_ai.agent.name"
WORKFLOW_NAME = "gen_ai.workflow.name"
TOOL_NAME = "gen_ai.tool.name"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
ERROR_TYPE = "error.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
OPENAI_API_TYPE = "openai.api.type"
"""The conventions' OpenAI refinement: ``chat_completions`` or ``responses``. The operation
stays ``chat`` on either: the conventions name no ``responses`` operation."""

OP_INVOKE_WORKFLOW = "invoke_workflow"
OP_INVOKE_AGENT = "invoke_agent"
OP_CHAT = "chat"
OP_EXECUTE_TOOL = "execute_tool"

RUN_ID = "swarmcore.run_id"
CONTEXT_MODE = "swarmcore.context_mode"
CONTEXT_BUDGET = "swarmcore.context_budget"
AGENTS = "swarmcore.agents"
STEP_PARALLEL = "swarmcore.step.parallel"
STEP_POLICY = "swarmcore.step.policy"
STEP_FAILED = "swarmcore.step.failed"
ATTEMPT = "swarmcore.attempt"
ATTEMPTS = "swarmcore.attempts"
TURN = "swarmcore.turn"
COST_USD = "swarmcore.cost_usd"
RUN_INPUT_TOKENS = "swarmcore.usage.input_tokens"
"""Tokens of the whole run, on the run span (not gen_ai.*, so backends do not count them twice)."""
RUN_OUTPUT_TOKENS = "swarmcore.usage.output_tokens"
RUN_CACHE_READ_TOKENS = "swarmcore.usage.cache_read.input_tokens"
RUN_REASONING_TOKENS = "swarmcore.usage.reasoning.output_tokens"
RUN_FAILURES = "swarmcore.failures"
CANCELLED = "swarmcore.cancelled"
TOOL_RESULT_CHARS = "swarmcore.tool.result_chars"
TOOL_TRUNCATED_FROM = "swarmcore.tool.truncated_from"

OPT_IN_VARIABLE = "OTEL_SEMCONV_STABILITY_OPT_IN"
LATEST_EXPERIMENTAL = "gen_ai_latest_experimental"
"""The opt-in value for the conventions' newest names (their first standalone release, v0.1.0)."""

PROVIDER_NAMES: Final = MappingProxyType(
    {
        "openai": "openai",
        "text-completion-openai": "openai",
        "azure": "azure.ai.openai",
        "azure_text": "azure.ai.openai",
        "azure_ai": "azure.ai.inference",
        "anthropic": "anthropic",
        "anthropic_text": "anthropic",
        "gemini": "gcp.gemini",
        "vertex_ai": "gcp.vertex_ai",
        "vertex_ai_beta": "gcp.vertex_ai",
        "bedrock": "aws.bedrock",
        "mistral": "mistral_ai",
        "codestral": "mistral_ai",
        "xai": "x_ai",
        "cohere": "cohere",
        "cohere_chat": "cohere",
        "deepseek": "deepseek",
        "groq": "groq",
        "perplexity": "perplexity",
        "watsonx": "ibm.watsonx.ai",
        "watsonx_text": "ibm.watsonx.ai",
    }
)
"""LiteLLM's provider names and the conventions' well-known ``gen_ai.provider.name`` for each.

A provider the conventions name no value for (Ollama, OpenRouter, a custom
provider...) keeps LiteLLM's name, as the conventions allow a custom value.
"""

EVENT_RETRY = "swarmcore.retry"
EVENT_FALLBACK = "swarmcore.fallback"
EVENT_TEXT_DELTA = "swarmcore.text_delta"
EVENT_REASONING_DELTA = "swarmcore.reasoning_delta"
EVENT_TOOL_CALL_DELTA = "swarmcore.tool_call_delta"
