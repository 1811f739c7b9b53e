"""Craits Arena: the referee and tournament server for the card game Craits."""

__version__ = "0.1.0"
