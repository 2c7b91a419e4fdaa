"""What the Temporal engine writes into a workflow's history: versioned JSON records.

Temporal stores every workflow's and activity's inputs and results, and every
failure's details, as payloads made by the client's and worker's data
converter. The engine's converter writes the record documents of
:mod:`swarmcore.store.records` (the record model the run store and the DBOS
engine share) under the encoding ``json/swarmcore``, so a model reply, a tool
record, a run's result or a swarmcore error in the history is the same JSON
document wherever swarmcore records it, never a pickle. A value no record holds
falls through to Temporal's own converters (its internal values, say).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultPayloadConverter,
    EncodingPayloadConverter,
)

from swarmcore.store import records

ENCODING = "json/swarmcore"
"""The ``encoding`` metadata of a payload the engine wrote."""


class RecordPayloadConverter(EncodingPayloadConverter):
    """A payload of a record document: :func:`swarmcore.store.records.dumps`/``loads``."""

    @property
    def encoding(self) -> str:
        """The encoding named in each payload's metadata."""
        return ENCODING

    def to_payload(self, value: Any) -> Payload | None:
        """``value`` as a record document, or None when no record holds it."""
        try:
            text = records.dumps(value)
        except TypeError:
            return None
        return Payload(metadata={"encoding": ENCODING.encode()}, data=text.encode())

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        """The value of a record document, validated (a pickle is refused, never loaded)."""
        return records.loads(payload.data.decode())


class RecordConverter(CompositePayloadConverter):
    """Records first, then Temporal's default converters for anything else."""

    def __init__(self) -> None:
        super().__init__(
            RecordPayloadConverter(),
            *DefaultPayloadConverter.default_encoding_payload_converters,
        )


DATA_CONVERTER = dataclasses.replace(DataConverter.default, payload_converter_class=RecordConverter)
"""The data converter of every client and worker of the engine."""
