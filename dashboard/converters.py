"""URL converters: a node name is whatever the exporters reported, newlines included."""

from __future__ import annotations


class NodeNameConverter:
    """Any non-empty text, ``/`` and newlines included (``path`` stops at a newline).

    Names come from exporter labels, which may hold any character; a node whose name has
    a newline must still have a page. NUL never gets here (``core.middleware`` refuses it).
    """

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value
