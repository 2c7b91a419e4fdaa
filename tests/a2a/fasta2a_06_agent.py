"""A pydantic-ai agent served by FastA2A 0.6.1 (A2A 0.3): run by the peer environment's Python.

``python fasta2a_06_agent.py PORT TEXT`` serves, on 127.0.0.1:PORT, an agent on
pydantic-ai's offline ``TestModel`` that answers TEXT. It imports nothing of
swarmcore: it runs in .peers/fasta2a-06 (see .ci/run), where FastA2A 0.6.1 lives.
"""

import sys

import uvicorn
from fasta2a.pydantic_ai import agent_to_a2a
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

port, text = int(sys.argv[1]), sys.argv[2]
agent = Agent(TestModel(custom_output_text=text), name="pydantic-agent")
app = agent_to_a2a(agent, url=f"http://127.0.0.1:{port}")
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
