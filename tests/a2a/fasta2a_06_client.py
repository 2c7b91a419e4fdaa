"""FastA2A 0.6.1's client (A2A 0.3) sends one task and prints the finished task as JSON.

``python fasta2a_06_client.py URL TEXT``: ``message/send``, then ``tasks/get``
until the task is no longer submitted or working (at most 60 s). Run by the peer
environment's Python (.peers/fasta2a-06), apart from swarmcore's.
"""

import asyncio
import json
import sys
import time
import uuid

import httpx
from fasta2a.client import A2AClient


async def main(url: str, text: str) -> None:
    # A blocking send waits for the whole task: more than httpx's default 5 s on a busy machine.
    client = A2AClient(url, http_client=httpx.AsyncClient(timeout=60))
    message = {
        "role": "user",
        "kind": "message",
        "message_id": uuid.uuid4().hex,
        "parts": [{"kind": "text", "text": text}],
    }
    modes = {"accepted_output_modes": ["text/plain"]}
    sent = await client.send_message(message, configuration=modes)
    if "error" in sent:
        print(json.dumps(sent))
        return
    task = sent["result"]
    deadline = time.monotonic() + 60
    while task["status"]["state"] in ("submitted", "working") and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        got = await client.get_task(task["id"])
        if "error" in got:
            print(json.dumps(got))
            return
        task = got["result"]
    print(json.dumps({"result": task}))


asyncio.run(main(sys.argv[1], sys.argv[2]))
