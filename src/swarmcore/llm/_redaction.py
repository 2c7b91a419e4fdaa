"""Keeping credentials out of text: by value first, then by shape.

A provider, an MCP server, a tool or a remote agent may quote a credential in
an error, in any shape (a Gemini ``AIza...`` key, an Azure hex key, a bearer
token, a database password). So every secret swarmcore can know is replaced by
its value wherever such an error becomes our text: the key arguments and
headers it passes on, and the environment variables that hold credentials
(:func:`is_secret_name`, and any variable holding a URL with a password).
Known shapes are masked as a second net, for secrets swarmcore never saw: API
keys (``sk-...``) and the user information of a URL
(``postgresql://***@db/app``).

Text is redacted whole, before it is shortened: a key cut in two is no longer
found by value, and its first half would be left in the text.

Values shorter than ``MIN_SECRET_LENGTH`` are not replaced by value: a
three-letter "token" would turn up in ordinary words and mangle the text. For
the same reason a value of fewer than ``WORD_SECRET_LENGTH`` letters alone (a
dictionary password such as ``postgres``) is replaced only where it stands as
a word of its own, so ``postgresql`` is left whole.
"""

from __future__ import annotations

import os
import re
import traceback
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

MIN_SECRET_LENGTH = 8
"""The shortest value redacted by value; shorter ones are left alone (shapes still apply)."""

WORD_SECRET_LENGTH = 16
"""A value of letters alone shorter than this is replaced only as a whole word (a longer one,
more likely random than a word, anywhere)."""

REDACTED = "***"

_KEY_PATTERN = re.compile(r"\b(sk|pk|key|gsk|xai)-[A-Za-z0-9_\-*]{6,}")

_URL_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#@\"'<>]+@")
"""``scheme://user:password@`` (or ``scheme://token@``): the user information of a URL."""

_SECRET_NAME = re.compile(
    r"""
    (?:PASSWORD|PASSWD|PASSPHRASE|SECRET|APIKEY)(?:[_-]|$)  # glued on too: PGPASSWORD
    | (?:^|[_-])
      (?:API_KEY|KEY|TOKEN|PASS|PAT|PRIVATE|DSN|CREDENTIALS?|AUTHORIZATION|CONNECTION_STRING)
      (?:[_-]|$)
    | [_-]PWD(?:[_-]|$)  # MYSQL_PWD; PWD alone is the working directory
    """,
    re.IGNORECASE | re.VERBOSE,
)
"""Names that hold a credential: ``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``,
``PGPASSWORD``, ``DB_PASS``, ``MYSQL_PWD``, ``GITHUB_PAT``, ``*_PASSPHRASE``,
``*_PRIVATE_KEY``, ``SENTRY_DSN``, ``api_key``, ``x-api-key``, ``Authorization``...
Not ``max_tokens`` (``TOKENS``), ``PATH``, ``PWD``, ``OLDPWD``, ``PASSENGER_*``,
``COMPASS_*`` or ``TOKENIZERS_PARALLELISM``: a word stands between separators (only the
long, unambiguous ones may be glued on at the front)."""


def is_secret_name(name: str) -> bool:
    """Whether a variable, setting or header called ``name`` holds a credential.

    This is the one rule for names; a variable of any name also counts when its
    value is a URL carrying a password (see :func:`env_secrets`).
    """
    return _SECRET_NAME.search(name) is not None


def redact(text: str, *secrets: str | None) -> str:
    """Remove credentials from text that may be shown to a user, logged or stored.

    Redact text whole, before shortening it: a secret cut in two is not found.

    Args:
        text: The text, e.g. a provider's error message.
        *secrets: Values to replace wherever they occur (the longest first);
            None and values shorter than ``MIN_SECRET_LENGTH`` are skipped, and
            a short value of letters alone is replaced only where it is a whole
            word (see ``WORD_SECRET_LENGTH``).

    Returns:
        The text with each secret, the user information of any URL, and anything
        shaped like an API key masked.
    """
    values = sorted(set(_usable(secrets)), key=len, reverse=True)
    if values:
        text = re.sub("|".join(map(_pattern, values)), REDACTED, text)
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
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
            ``extra_headers={"Authorization": ...}``...), or an environment
            mapping, searched recursively.

    Returns:
        The values, with the token alone for ``Bearer ...``-style header values too.
    """
    values = [api_key, *_secret_settings(settings or {}, in_headers=False)]
    return list(_with_tokens(_usable(values)))


def env_secrets() -> list[str]:
    """The credentials in the environment.

    The values of variables :func:`is_secret_name` names (``OPENAI_API_KEY``,
    ``AWS_SECRET_ACCESS_KEY``, ``HF_TOKEN``, ``PGPASSWORD``, ``MYSQL_PWD``...:
    a superset of the variables LiteLLM reads for any provider), and the
    password of any variable holding a URL with one (``DATABASE_URL``,
    ``REDIS_URL``...).
    """
    return list(_usable(_secret_settings(os.environ, in_headers=False)))


def _secret_settings(settings: Mapping[str, Any], *, in_headers: bool) -> Iterator[str]:
    for name, value in settings.items():
        if isinstance(value, Mapping):
            headers = in_headers or "header" in str(name).lower()
            yield from _secret_settings(value, in_headers=headers)  # pyright: ignore[reportUnknownArgumentType] -- any mapping
        elif isinstance(value, str):
            if in_headers or is_secret_name(str(name)):
                yield value
            else:
                yield from _url_password(value)


def _url_password(value: str) -> Iterator[str]:
    """The password of a URL, as written and decoded, with its user (``user:password``)."""
    if "://" not in value or "@" not in value:
        return
    try:
        parts = urllib.parse.urlsplit(value.strip())
        password = parts.password
    except ValueError:
        return
    if password:
        yield password
        yield urllib.parse.unquote(password)
        yield f"{parts.username or ''}:{password}"


def _pattern(value: str) -> str:
    """A value as a regex: anywhere, or as a whole word when it is a short one of letters."""
    escaped = re.escape(value)
    if value.isalpha() and len(value) < WORD_SECRET_LENGTH:
        return rf"(?<![^\W_]){escaped}(?![^\W_])"
    return escaped


def _with_tokens(values: Iterable[str]) -> Iterator[str]:
    for value in values:
        yield value
        scheme, _, token = value.strip().rpartition(" ")
        if scheme and len(token) >= MIN_SECRET_LENGTH:  # "Bearer abc...": the token alone too
            yield token


def _usable(values: Iterable[str | None]) -> Iterator[str]:
    return (v for v in values if v is not None and len(v) >= MIN_SECRET_LENGTH)
