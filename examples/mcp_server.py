"""A tiny MCP server for examples/mcp_tools.py: unit conversions over stdio.

Run by the example as a subprocess; any MCP client can use it too:
``python examples/mcp_server.py`` speaks MCP on stdin/stdout.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("units")

_TO_GRAMS = {"g": 1.0, "kg": 1000.0, "oz": 28.349523125, "lb": 453.59237}


@server.tool()
def convert_mass(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a mass between g, kg, oz and lb."""
    if from_unit not in _TO_GRAMS or to_unit not in _TO_GRAMS:
        raise ValueError(f"units must be among {', '.join(_TO_GRAMS)}")
    return round(value * _TO_GRAMS[from_unit] / _TO_GRAMS[to_unit], 4)


@server.tool()
def caffeine_per_cup(drink: str) -> dict[str, float | str]:
    """Typical caffeine in one cup of a drink, in milligrams."""
    table = {"coffee": 95.0, "tea": 47.0, "espresso": 63.0, "decaf": 2.0}
    return {"drink": drink, "mg": table.get(drink.lower(), 0.0)}


if __name__ == "__main__":
    server.run()
