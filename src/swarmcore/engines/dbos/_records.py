"""What the DBOS engine writes into DBOS's tables: versioned JSON records, never pickles.

DBOS stores every workflow's inputs, output and error, every step's output or
error, and every event and message through one serializer (by default pickle).
The engine hands DBOS :class:`RecordSerializer`, which writes the record
documents of :mod:`swarmcore.store.records` (the record model the run store
shares): each row's ``serialization`` column says ``swarmcore_json``, and its
value is a JSON document with the record version. Reading a row back validates
it with pydantic; a row that is not such a document (a pickle) is refused.

Every DBOS client on the engine's database needs the same serializer
(``DBOSClient(system_database_url=url, serializer=RecordSerializer())``).
"""

from __future__ import annotations

from typing import Any

from dbos import Serializer

from swarmcore.store import records

SERIALIZATION = "swarmcore_json"
"""What the ``serialization`` column of a row the engine wrote says."""


class RecordSerializer(Serializer):
    """DBOS's serializer for the engine's rows: :func:`swarmcore.store.records.dumps`/``loads``."""

    def name(self) -> str:
        """The name DBOS writes beside each value (stable: the version is inside the value)."""
        return SERIALIZATION

    def serialize(self, data: Any) -> str:
        """``data`` as a record document.

        Raises:
            TypeError: ``data`` holds a value no record holds.
        """
        return records.dumps(data)

    def deserialize(self, serialized_data: str) -> Any:
        """The value of a record document, validated.

        Raises:
            ValueError: Not a record document (a pickle is refused, never loaded).
        """
        return records.loads(serialized_data)
