"""From a completion's text to a game command, or a reason it is not one.

The policy writes free text; the game takes one short command among those it
currently admits. `parse_command` keeps the first line, normalises case, spacing
and a trailing period, and rejects what cannot be a command (empty, too long,
control or replacement characters from invalid UTF-8) with a one-line reason the
environment shows as the observation.
"""

from __future__ import annotations

import unicodedata

MAX_COMMAND_CHARS = 120


def parse_command(text: str, max_chars: int = MAX_COMMAND_CHARS) -> tuple[str, str]:
    """(command, "") or ("", reason)."""
    if len(text) > 16 * max_chars:
        return "", f"Your command was {len(text)} characters; a command is one short line."
    line = text.strip().split("\n", 1)[0].strip()
    if not line:
        return "", "You typed nothing. Type one of the commands listed."
    if len(line) > max_chars:
        return "", f"Your command was {len(line)} characters; a command is one short line."
    if any(ch == "\ufffd" or unicodedata.category(ch)[0] == "C" for ch in line):
        return "", "Your command has unreadable characters. Type plain text."
    return " ".join(line.lower().rstrip(".!").split()), ""


def match_admissible(command: str, admissible: tuple[str, ...]) -> str | None:
    """The admissible command equal to `command` up to case and spacing, else None."""
    for option in admissible:
        if " ".join(option.lower().split()) == command:
            return option
    return None
