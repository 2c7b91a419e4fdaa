"""Reading answers liberally: what is dropped from a result the a2a-sdk would refuse, and what not.

The end-to-end cases (FastA2A's timestamps) are in test_fasta2a.py; these pin
the rule on results built by hand: every malformed optional field goes, at any
depth, and a required one stays (so the answer is refused, as it should be).
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator

from a2a.types import StreamResponse, Task
from google.protobuf import json_format

from swarmcore.a2a._lenient import repair_v03, repair_v10
from swarmcore.a2a._wire import each_event, fixed_event

TASK = {
    "id": "t1",
    "contextId": "c1",
    "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-27T10:00:00.123456Z"},
    "artifacts": [{"artifactId": "a", "parts": [{"text": "the answer"}]}],
}


def test_a_sound_result_is_left_alone() -> None:
    task = copy.deepcopy(TASK)
    assert repair_v10(task, Task) == []
    assert task == TASK


def test_every_malformed_optional_field_goes_at_any_depth() -> None:
    result = {"task": copy.deepcopy(TASK)}
    result["task"]["status"]["timestamp"] = "2026-11-27T10:00:00.123456"  # no offset
    result["task"]["artifacts"][0]["parts"].append({"text": "more", "metadata": "not a map"})
    result["task"]["history"] = "not a list"
    dropped = repair_v10(result, StreamResponse)
    assert [d.split(" = ")[0] for d in dropped] == [
        "StreamResponse.task.status.timestamp",
        "StreamResponse.task.artifacts[0].parts[1].metadata",
        "StreamResponse.task.history",
    ]
    parsed = json_format.ParseDict(result, StreamResponse())
    assert parsed.task.status.state == 3  # the rest of the answer kept
    assert [p.text for p in parsed.task.artifacts[0].parts] == ["the answer", "more"]


def test_a_malformed_required_field_stays() -> None:
    task = copy.deepcopy(TASK)
    task["id"] = {"not": "a string"}
    assert repair_v10(task, Task) == []
    assert task["id"] == {"not": "a string"}  # the SDK refuses the answer, and says why


def test_a_0_3_status_timestamp_without_offset_goes() -> None:
    update = {"kind": "status-update", "status": {"state": "working", "timestamp": "2026-11-27"}}
    [dropped] = repair_v03(update)
    assert dropped.startswith("status.timestamp")
    assert update["status"] == {"state": "working"}
    sound = {"kind": "task", "status": {"state": "working", "timestamp": "2026-11-27T10:00:00Z"}}
    assert repair_v03(sound) == []


async def test_events_split_across_chunks_are_repaired_whole() -> None:
    stamp = "2026-11-27T10:00:00"
    event = {"jsonrpc": "2.0", "id": 1, "result": {"task": {**TASK, "status": {"state": 3}}}}
    event["result"]["task"]["status"]["timestamp"] = stamp
    raw = f"event: message\r\ndata: {json.dumps(event)}\r\n\r\n: ping\r\n\r\n".encode()

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(raw), 7):  # cuts inside lines and inside \r\n
            yield raw[i : i + 7]

    def repair(result: dict[str, object]) -> bool:
        return bool(repair_v10(result, StreamResponse))

    out = [fixed_event(e, repair) async for e in each_event(chunks())]
    assert len(out) == 2
    assert out[1] == b": ping\n\n"
    lines = out[0].decode().splitlines()
    assert lines[0] == "event: message"
    data = json.loads(lines[1].removeprefix("data: "))
    assert "timestamp" not in data["result"]["task"]["status"]
    assert data["result"]["task"]["artifacts"] == TASK["artifacts"]
