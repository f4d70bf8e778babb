"""Claude Code's own questions as its AskUserQuestion tool sends them (2.1.328: each
with its header, options of label and description, multiSelect), one single-select
and one multi-select, for every test of them: the hook's, the real TUI's, each
editor's and the dashboard's."""

from __future__ import annotations

from typing import Any

DATABASE: dict[str, Any] = {
    "question": "Which database should the cache use?",
    "header": "Database",
    "options": [
        {"label": "SQLite", "description": "embedded, one file"},
        {"label": "Postgres", "description": "the server we already run"},
    ],
    "multiSelect": False,
}
FEATURES: dict[str, Any] = {
    "question": "Which features should ship?",
    "header": "Features",
    "options": [
        {"label": "Alpha", "description": "the first"},
        {"label": "Beta", "description": "the second"},
        {"label": "Gamma", "description": "the third"},
    ],
    "multiSelect": True,
}
