"""Keeping credentials out of text: by value first, then by shape.

A provider or an MCP server may quote the credential it was sent in its error,
in any shape (a Gemini ``AIza...`` key, an Azure hex key, a bearer token).
So every secret swarmcore can know is replaced by its value wherever such an
error becomes our text: the key arguments and headers it passes on, and the
environment variables that hold credentials. Known key shapes (``sk-...``)
are masked as a second net, for keys swarmcore never saw.

Values shorter than ``MIN_SECRET_LENGTH`` are not replaced by value: a
three-letter "token" would turn up in ordinary words and mangle the text.
"""

from __future__ import annotations

import os
import re
import traceback
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "carries_secret",
    "env_secrets",
    "is_secret_name",
    "redact",
    "secret_values",
]

MIN_SECRET_LENGTH = 8
"""The shortest value redacted by value; shorter ones are left alone (shapes still apply)."""

REDACTED = "***"

_KEY_PATTERN = re.compile(r"\b(sk|pk|key|gsk|xai)-[A-Za-z0-9_\-*]{6,}")

_SECRET_NAME = re.compile(
    r"(?:^|[_-])(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTHORIZATION)(?:[_-]|$)",
    re.IGNORECASE,
)
"""Names that hold a credential: ``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``api_key``,
``x-api-key``, ``Authorization``... ``max_tokens`` does not match (``TOKENS``)."""


def is_secret_name(name: str) -> bool:
    """Whether a variable, setting or header called ``name`` holds a credential."""
    return _SECRET_NAME.search(name) is not None


def redact(text: str, *secrets: str | None) -> str:
    """Remove credentials from text that may be shown to a user, logged or stored.

    Args:
        text: The text, e.g. a provider's error message.
        *secrets: Values to replace wherever they occur (the longest first);
            None and values shorter than ``MIN_SECRET_LENGTH`` are skipped.

    Returns:
        The text with each secret, and anything shaped like an API key, masked.
    """
    for secret in sorted(_usable(secrets), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return _KEY_PATTERN.sub(lambda m: f"{m.group(1)}-{REDACTED}", text)


def carries_secret(error: BaseException, secrets: Iterable[str]) -> bool:
    """Whether ``error``'s traceback (its whole chain, groups included) shows a credential."""
    printed = "".join(traceback.format_exception(error))
    return redact(printed, *secrets) != printed


def secret_values(
    *, api_key: str | None = None, settings: Mapping[str, Any] | None = None
) -> list[str]:
    """The credentials among a call's arguments: its key and every secret setting or header.

    Every value of a headers mapping counts, whatever its name: headers are
    given for authentication far more often than not.

    Args:
        api_key: The key passed explicitly.
        settings: Provider settings (``api_key``, ``azure_ad_token``,
            ``extra_headers={"Authorization": ...}``...), searched recursively.

    Returns:
        The values, with the token alone for ``Bearer ...``-style header values too.
    """
    values = [api_key, *_secret_settings(settings or {}, in_headers=False)]
    return list(_with_tokens(_usable(values)))


def env_secrets() -> list[str]:
    """The values of environment variables whose names say they hold a credential.

    ``OPENAI_API_KEY``, ``GEMINI_API_KEY``, ``AZURE_API_KEY``, ``AWS_SECRET_ACCESS_KEY``,
    ``HF_TOKEN``...: a superset of the variables LiteLLM reads for any provider.
    """
    return list(_usable(v for k, v in os.environ.items() if is_secret_name(k)))


def _secret_settings(settings: Mapping[str, Any], *, in_headers: bool) -> Iterator[str]:
    for name, value in settings.items():
        if isinstance(value, Mapping):
            headers = in_headers or "header" in str(name).lower()
            yield from _secret_settings(value, in_headers=headers)  # pyright: ignore[reportUnknownArgumentType] -- any mapping
        elif isinstance(value, str) and (in_headers or is_secret_name(str(name))):
            yield value


def _with_tokens(values: Iterable[str]) -> Iterator[str]:
    for value in values:
        yield value
        scheme, _, token = value.strip().rpartition(" ")
        if scheme and len(token) >= MIN_SECRET_LENGTH:  # "Bearer abc...": the token alone too
            yield token


def _usable(values: Iterable[str | None]) -> Iterator[str]:
    return (v for v in values if v is not None and len(v) >= MIN_SECRET_LENGTH)
