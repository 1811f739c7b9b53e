"""Viewing replays: the text walkthrough and the HTML pages (assets/ holds the page templates)."""
