"""A scripted "ling" for the tmux relay tests: a program in a terminal that records,
byte for byte, what the relay types into it.

Run inside a tmux pane as ``python3 scripted_ling.py RECORD [DIALOG_FLAG]``.  It puts
its terminal in raw mode (so nothing is cooked: escape bytes, NUL, CR all arrive as
they were sent), turns on bracketed paste as Claude Code does (``ESC [ ? 2004 h``),
and appends one JSON line to RECORD per submission (everything read up to a CR, the
byte Enter sends), as ``{"raw": HEX}``.  A first line ``{"ready": true}`` says the
terminal is set up, so a test never types before the ling listens.

While the file DIALOG_FLAG exists the ling shows ``Allow this action? (y/n)`` as its
last line, as a permission dialog would; when the file is removed it erases that line
and shows its prompt again.
"""

from __future__ import annotations

import json
import os
import select
import sys
import termios
import tty
from pathlib import Path

PROMPT = "ling> "
DIALOG = "Allow this action? (y/n) "


def main() -> None:
    record = Path(sys.argv[1])
    flag = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)

    def show(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def log(entry: dict[str, object]) -> None:
        with record.open("a") as f:
            f.write(json.dumps(entry) + "\n")

    try:
        show("\x1b[?2004h" + PROMPT)
        showing_dialog = False
        pending = b""
        log({"ready": True})
        while True:
            wants_dialog = flag is not None and flag.exists()
            if wants_dialog and not showing_dialog:
                show("\r\n" + DIALOG)
                showing_dialog = True
            elif showing_dialog and not wants_dialog:
                show("\r\x1b[2K" + PROMPT)  # erase the dialog line in place
                showing_dialog = False
            readable, _, _ = select.select([fd], [], [], 0.05)
            if not readable:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            pending += chunk
            while b"\r" in pending:
                line, _, pending = pending.partition(b"\r")
                log({"raw": line.hex()})
                show("\r\n" + PROMPT)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


if __name__ == "__main__":
    main()
