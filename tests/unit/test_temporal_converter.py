"""What the Temporal engine writes into a workflow's history: the run store's JSON records.

Every value the engine hands Temporal (a run's inputs and result, a model reply, a
tool record, a swarmcore error in a failure's details, an approval) goes through
one data converter whose payloads are record documents (``json/swarmcore``); a
payload of that encoding that is not one (a pickle) is refused, never loaded.
"""

from __future__ import annotations

import base64
import json
import pickle

import pytest

pytest.importorskip("temporalio", reason="the [temporal] extra (a dev dependency)")

from temporalio.api.common.v1 import Payload

from swarmcore.engines.temporal import DATA_CONVERTER
from swarmcore.engines.temporal._converter import ENCODING
from swarmcore.errors import SwarmError
from swarmcore.store import records
from tests.unit.test_records import expected


@pytest.mark.parametrize("name", sorted(expected()))
def test_each_record_survives_a_temporal_payload(name: str) -> None:
    value = expected()[name]
    converter = DATA_CONVERTER.payload_converter
    (payload,) = converter.to_payloads([value])
    assert payload.metadata["encoding"] == ENCODING.encode()
    assert json.loads(payload.data)["swarmcore"] == records.RECORD_VERSION
    (loaded,) = converter.from_payloads([payload])
    assert records.dumps(loaded) == records.dumps(value)  # the same document back


def test_a_swarmcore_error_travels_as_its_class_with_its_partial() -> None:
    (error,) = (v for v in expected().values() if isinstance(v, SwarmError) and v.partial)
    (payload,) = DATA_CONVERTER.payload_converter.to_payloads([error])
    (loaded,) = DATA_CONVERTER.payload_converter.from_payloads([payload])
    assert type(loaded) is type(error)
    assert vars(loaded) == vars(error)


def test_a_value_no_record_holds_goes_to_temporals_own_converters() -> None:
    (payload,) = DATA_CONVERTER.payload_converter.to_payloads([b"raw bytes"])
    assert payload.metadata["encoding"] == b"binary/plain"
    assert DATA_CONVERTER.payload_converter.from_payloads([payload]) == [b"raw bytes"]


def test_a_pickle_in_a_record_payload_is_refused_not_loaded() -> None:
    pickled = base64.b64encode(pickle.dumps(expected())).decode()
    payload = Payload(metadata={"encoding": ENCODING.encode()}, data=pickled.encode())
    with pytest.raises(ValueError, match="never unpickles"):
        DATA_CONVERTER.payload_converter.from_payloads([payload])
