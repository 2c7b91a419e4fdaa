"""What every SVG the viewer draws shares: untrusted text made safe, short coordinates."""

from __future__ import annotations

import re
from xml.sax.saxutils import escape

# Characters XML 1.0 cannot hold at all (NUL, most C0 controls, lone surrogates).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def number(value: float) -> str:
    """A coordinate, short: at most one decimal."""
    return f"{round(value, 1):g}"


def text(value: str) -> str:
    """``value`` safe as XML character data or a double-quoted attribute value.

    Model output, tool results and stored names are untrusted: escaped, they
    stay inert text; a character XML cannot hold becomes U+FFFD.
    """
    return escape(_NOT_XML.sub("\ufffd", value), {'"': "&quot;"})
