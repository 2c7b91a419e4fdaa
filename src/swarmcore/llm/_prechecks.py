"""What is checked before a model call: its key, its model name, and where it goes.

A missing key fails before anything is sent (LiteLLM would call it a 500); a
name that looks misspelt is warned of when a custom endpoint may serve it
anyway. ``errors`` words its failures with the same hints (which key to
check, which known model a name resembles, which setting sent it where).
"""

from __future__ import annotations

import difflib
import functools
import logging
import os
import urllib.parse
import warnings
from typing import Any

from swarmcore.errors import ModelError
from swarmcore.llm import _local as local
from swarmcore.llm import _price_data as price_data
from swarmcore.llm._loader import load_litellm
from swarmcore.llm._redaction import is_secret_name, redact
from swarmcore.llm._types import CallSpec
from swarmcore.llm.choice import is_native, is_openai_model

logger = logging.getLogger("swarmcore.llm")


_keys_found: set[str] = set()
"""Models whose key was found; a missing key is not remembered, since it may be set later."""


def check_key(call: CallSpec, model: str) -> None:
    """Fail before the call when the provider's key is missing (LiteLLM would call it a 500).

    Raises:
        ModelError: No API key for ``model`` was passed or found in the environment.
    """
    if _has_key(call) or model in _keys_found or local.is_local(model):
        return
    missing = [k for k in _missing_keys(call, model) if "KEY" in k or "TOKEN" in k]
    if missing:
        raise ModelError(
            f"Agent {call.agent_name!r}: {model} needs an API key and none was "
            f"found: set {' or '.join(missing)}, or pass api_key= to the Agent.{name_hint(model)}",
            agent_name=call.agent_name,
            model=model,
        )
    _keys_found.add(model)


def _has_key(call: CallSpec) -> bool:
    """Whether the agent passes its key: ``api_key=`` or ``model_settings={"api_key": ...}``."""
    return call.api_key is not None or bool(call.settings.get("api_key"))


def missing_keys(model: str) -> list[str]:
    """The environment variables ``model`` needs and lacks, e.g. ``["OPENAI_API_KEY"]``.

    For an agent that passes no key itself. OpenAI models are answered without
    LiteLLM; others by LiteLLM's ``validate_environment``.

    Raises:
        Exception: LiteLLM does not know the model's provider.
    """
    call = CallSpec(agent_name="", model=model)
    if local.is_local(model):  # answered in process: no key
        return []
    if is_native(call, model):  # the variable the openai SDK and LiteLLM both read
        return [] if os.environ.get("OPENAI_API_KEY") else ["OPENAI_API_KEY"]
    return list(load_litellm().validate_environment(model).get("missing_keys", []))


def _missing_keys(call: CallSpec, model: str) -> list[str]:
    if local.is_local(model):
        return []
    if is_native(call, model):
        return [] if os.environ.get("OPENAI_API_KEY") else ["OPENAI_API_KEY"]
    try:
        return missing_keys(model)
    except Exception as exc:  # an unknown provider has no key to suggest
        logger.debug("validate_environment(%s) failed: %s", model, exc)
        return []


def key_hint(call: CallSpec, model: str) -> str:
    """Which key to check: the one passed, or the environment variable LiteLLM read."""
    if _has_key(call):
        return "Check the key passed as api_key= (or in model_settings)."
    names = [k for k in _missing_keys(call, model) if "KEY" in k]
    if names:
        return f"No key was found: set {' or '.join(names)}."
    # LiteLLM names a provider's variables only when they are missing; a set one is
    # found by the provider's prefix (OPENAI_API_KEY for openai/ models).
    prefix = f"{provider_of(model).upper()}_"
    present = [k for k in os.environ if k.startswith(prefix) and is_secret_name(k)]
    if present:
        return f"Check the key in {' or '.join(sorted(present))}."
    if not prefix[:-1].isidentifier():  # a provider like swarmcore-test has no variable
        return "Check the key the provider was given, or pass api_key=."
    return f"Check the provider's key variable ({prefix}API_KEY, for instance) or pass api_key=."


@functools.cache  # asked on every call (check_model_name), and fixed for a model string
def provider_of(model: str) -> str:
    """LiteLLM's provider for ``model`` (``openai``), or the text before its first slash."""
    if is_openai_model(model):  # known without LiteLLM, which the native path never loads
        return "openai"
    if local.is_local(model):  # an in-process test model: LiteLLM has never heard of it
        return local.PREFIX.rstrip("/")
    try:
        provider: Any = load_litellm().get_llm_provider(model)[1]
    except Exception as exc:  # an unknown provider: fall back on the model string
        logger.debug("get_llm_provider(%s) failed: %s", model, exc)
        provider = None
    return provider if isinstance(provider, str) else model.partition("/")[0]


@functools.cache
def similar_model(model: str) -> str | None:
    """The known model ``model`` most resembles, when LiteLLM does not know ``model`` itself.

    Known models are LiteLLM's (``litellm.models_by_provider``), under the same
    provider; None when ``model`` is one of them or nothing comes close.
    """
    if local.is_local(model):  # the test models' names are their own
        return None
    provider = provider_of(model)
    prefix = f"{provider}/"
    bare = model.removeprefix(prefix)
    if provider == "openai":  # from the price map as data: no LiteLLM import
        known: set[str] | frozenset[str] = price_data.known_models()
        listed = bool(price_data.model_info(model))
    else:
        lit = load_litellm()
        known = {str(m).removeprefix(prefix) for m in lit.models_by_provider.get(provider, ())}
        listed = model in lit.model_cost
    if not known or bare in known or listed:
        return None
    close = difflib.get_close_matches(bare, sorted(known), n=1, cutoff=0.85)
    return model[: len(model) - len(bare)] + close[0] if close else None


def name_hint(model: str) -> str:
    """A sentence naming the known model ``model`` resembles; empty when there is none."""
    similar = similar_model(model)
    if similar is None:
        return ""
    return f" Note that {model!r} is not a model LiteLLM knows; did you mean {similar!r}?"


_names_checked: set[tuple[str, str | None]] = set()


def check_model_name(call: CallSpec, model: str) -> None:
    """Warn, once per model, of a name that looks misspelt when the endpoint is custom.

    A custom endpoint (``api_base``, ``OPENAI_BASE_URL``...) may serve any name,
    so this is a warning; on the provider's own endpoint a wrong name fails,
    and that error carries the same hint.
    """
    base = configured_base(call, model)
    key = (model, base[0] if base else None)
    if key in _names_checked:
        return
    _names_checked.add(key)
    similar = similar_model(model)
    if base is not None and similar is not None:
        warnings.warn(
            f"Agent {call.agent_name!r}: {model!r} is not a model LiteLLM knows; did you "
            f"mean {similar!r}? (Sent as it is: the endpoint {shown_url(base[0])} may "
            "serve it.)",
            UserWarning,
            stacklevel=2,
        )


def configured_base(call: CallSpec, model: str) -> tuple[str, str] | None:
    """The base URL set for ``model``'s calls, and where it was set; None for the default."""
    if call.api_base:
        return call.api_base, "the agent's api_base"
    for name in ("api_base", "base_url"):
        value = call.settings.get(name)
        if isinstance(value, str) and value:
            return value, f"model_settings[{name!r}]"
    provider = provider_of(model).upper()
    for name in (f"{provider}_BASE_URL", f"{provider}_API_BASE"):
        value = os.environ.get(name)
        if value:
            return value, name
    return None


def shown_url(url: str) -> str:
    """``url`` without credentials: its user, password and query are dropped."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))
    except ValueError:  # not a URL: show it redacted of key shapes
        return redact(url)
