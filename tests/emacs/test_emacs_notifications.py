"""Urgent prompts raise a real desktop notification: Emacs's notifications.el talks to
a real dbus-daemon (dbus-run-session) and a real notification daemon (dunst, on Xvfb)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ELISP = Path(__file__).resolve().parents[2] / "elisp"
NEEDED = ["emacs", "dbus-run-session", "dbus-send", "dunst", "dunstctl", "Xvfb"]

pytestmark = pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in NEEDED),
    reason=f"needs {', '.join(NEEDED)} (installed by scripts/test-all.sh)",
)

# Runs inside dbus-run-session: a private session bus for this test alone.
SCRIPT = r"""
set -eu
exec 3>&1
Xvfb -displayfd 4 -screen 0 640x480x24 4>"$TMP/display" >/dev/null 2>&1 &
XVFB=$!
python3 -m hive_rpc serve --socket "$SOCK" --data-dir "$TMP/data" --store memory --no-notify \
    --ready-fd 5 5>"$TMP/ready" >/dev/null 2>&1 &
HUB=$!
trap 'kill $DUNST $HUB $XVFB 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$TMP/display" ] && [ -s "$TMP/ready" ] && break; sleep 0.1; done
DISPLAY=":$(cat "$TMP/display")" dunst >/dev/null 2>&1 &
DUNST=$!
for _ in $(seq 100); do
    dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.Notifications \
        2>/dev/null | grep -q true && break
    sleep 0.1
done
python3 -m hive_rpc ask "Deploy to production?" --urgent --agent deployer \
    --socket "$SOCK" --no-start >/dev/null
emacs --batch -Q -L "$ELISP" --eval "(progn
  (require 'hive-rpc)
  (setq hive-rpc-socket \"$SOCK\")
  (defvar hive-test-notified nil)
  (advice-add 'notifications-notify :after
              (lambda (&rest _) (setq hive-test-notified t)))
  (hive-rpc-mode 1)
  (let ((deadline (+ (float-time) 15)))
    (while (and (not hive-test-notified) (< (float-time) deadline))
      (accept-process-output nil 0.1)))
  (kill-emacs (if hive-test-notified 0 3)))"
dunstctl close-all
sleep 0.3
dunstctl history
"""


def test_urgent_prompt_raises_a_desktop_notification(short_tmp: Path) -> None:
    python_dir = str(Path(sys.executable).parent)
    env = {
        "PATH": f"{python_dir}:/usr/bin:/bin",
        "HOME": str(short_tmp),
        "TMP": str(short_tmp),
        "SOCK": str(short_tmp / "hub.sock"),
        "ELISP": str(ELISP),
    }
    result = subprocess.run(
        ["dbus-run-session", "--", "bash", "-c", SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # What the real notification daemon received and kept in its history:
    assert "hive-rpc: deployer asks" in result.stdout
    assert "Deploy to production?" in result.stdout
