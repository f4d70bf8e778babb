"""What every ``hive-rpc setup AGENT`` shares: the commands it writes, and how it
reads and writes the agent's files.

Why so careful: these files are the user's (other servers, hooks, settings) and,
some of them, the agent's own state.  So every file is read and checked before any
is written (one setup cannot parse is refused and nothing is changed), a file whose
content would not change is not touched, and a changed file is first copied to a
backup named by its content's hash (so running setup twice writes no second
backup), then replaced atomically with its mode kept.

The commands written are absolute: agents run hooks and MCP servers with their own
environment, whose ``PATH`` may lack ``hive-rpc``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hive_rpc.cli.exits import EXIT_REFUSED, CliError

SERVER_NAME = "hive-rpc"
"""The MCP server's name in every agent's config."""


class Unmergeable(Exception):
    """A file whose hive-rpc part has a shape setup will not guess about."""


def hive_rpc_command() -> list[str]:
    """The installed ``hive-rpc``, absolute: the script beside this interpreter (a
    virtualenv's ``bin``), else the one on PATH, else ``python -m hive_rpc``."""
    beside = Path(sys.executable).parent / "hive-rpc"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside.absolute())]
    found = shutil.which("hive-rpc")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "hive_rpc"]


def hub_options(socket: Path | None, data_dir: Path | None) -> list[str]:
    """The hub options given to setup, passed on to every command it writes."""
    words = []
    if socket is not None:
        words += ["--socket", str(socket.absolute())]
    if data_dir is not None:
        words += ["--data-dir", str(data_dir.absolute())]
    return words


def runs_hook(command: object, agent: str) -> bool:
    """``command`` (a shell command line) runs ``hive-rpc hook AGENT``, whatever the
    path and options: how setup finds its own hook among the user's."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    runs_us = any(w.endswith("hive-rpc") or w == "hive_rpc" for w in words[:3])
    return runs_us and any(
        w == "hook" and words[i + 1 : i + 2] == [agent] for i, w in enumerate(words)
    )


def place_hook(
    groups: list[Any],
    ours: dict[str, Any],
    is_ours: Callable[[object], bool],
    matcher: str | None,
) -> list[Any]:
    """A hook event's matcher groups (Claude Code's and Gemini CLI's settings share the
    shape ``[{"matcher": ..., "hooks": [...]}]``) with one hook of ours: one already
    there is updated where it stands (in the user's group, under the user's matcher),
    duplicates are dropped, and without one ``ours`` is added in a group of its own
    under ``matcher`` (None: no matcher).  Other hooks are left as they are."""
    placed = False
    kept = []
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            kept.append(group)
            continue
        entries = []
        for hook in group["hooks"]:
            if not is_ours(hook):
                entries.append(hook)
            elif not placed:
                entries.append({**hook, **ours})
                placed = True
        if entries:
            kept.append({**group, "hooks": entries})
    if not placed:
        kept.append({**({"matcher": matcher} if matcher else {}), "hooks": [ours]})
    return kept


def drop_hooks(groups: list[Any], is_ours: Callable[[object], bool]) -> list[Any]:
    """The matcher groups without our hooks (``--remove``); a group that held only
    ours goes, one that held none is kept as it was."""
    kept = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            entries = [h for h in group["hooks"] if not is_ours(h)]
            if entries != group["hooks"]:
                if entries:
                    kept.append({**group, "hooks": entries})
                continue
        kept.append(group)
    return kept


def read_text(path: Path) -> str | None:
    """The file's text, None when there is no such file; a CliError naming it when
    it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise CliError(f"cannot read {path}: {e}; nothing was changed", EXIT_REFUSED) from None


def refused(path: Path, why: str) -> CliError:
    """The error for a file setup will not write over."""
    return CliError(
        f"{path} {why}; fix it or move it away and run this again (nothing was changed)",
        EXIT_REFUSED,
    )


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, None when there is no such file; a CliError naming
    the file when it is anything else, so nothing gets written over it."""
    text = read_text(path)
    if text is None:
        return None
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as e:
        raise refused(path, f"is not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise refused(path, "holds JSON that is not an object")
    return value


def json_text(value: dict[str, Any]) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def backup_path(path: Path, content: bytes) -> Path:
    """Where the content a file held before setup is kept: named by its hash, so the
    same content is backed up once however often setup runs."""
    digest = hashlib.sha256(content).hexdigest()[:12]
    return path.with_name(f"{path.name}.hive-rpc-{digest}.bak")


def write_text(path: Path, text: str, *, private: bool = False) -> Path | None:
    """Write one changed file (a backup of the old one first, then an atomic replace
    keeping its mode; a new file gets 0600 when ``private``, else 0644); the
    backup's path, or None for a new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o600 if private else 0o644
    if path.exists():
        old = path.read_bytes()
        mode = path.stat().st_mode & 0o777
        backup = backup_path(path, old)
        if not backup.exists():
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            with os.fdopen(fd, "wb") as f:
                f.write(old)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return backup


def report(path: Path, changed: bool, backup: Path | None, *, removing: bool = False) -> None:
    """The line saying what became of one file."""
    if not changed:
        print(f"{path}: " + ("nothing of hive-rpc's there" if removing else "already set up"))
        return
    what = "hive-rpc's entries removed" if removing else "written"
    print(f"{path}: {what}" + (f" (the old one is in {backup})" if backup else ""))
