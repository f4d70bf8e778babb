"""The shell examples in README.md and docs/*.md run, and print what the docs show.

Every fenced block with lines starting with ``$ `` is a transcript: ``$ `` lines are
commands (a line ending in ``\\`` continues on the next), and the lines up to the next
command are what it prints, stdout and stderr interleaved as a terminal shows them.
The blocks of one file run in order in one ``bash`` session, so variables (``id=$(...)``)
and the prompt ids printed by earlier blocks carry over to later ones.

The environment is a fresh temp root per session: HOME, XDG_RUNTIME_DIR and
XDG_DATA_HOME inside it, this interpreter's bin directory first on PATH, cwd the root,
a private D-Bus session bus (as on a desktop), and a ``~/.curlrc`` that turns off
curl's progress meter (curl shows none on a terminal; here output goes to a file).
The CLI autostarts the hub as it does for a user.  Every process the session started
(found by a marker variable in its environment) is killed afterwards.

Commands are rewritten before they run:

- ``/tmp/...`` paths (the docs' scratch dirs, ``/tmp/hvdoc/hub.sock``) move under the
  temp root, so sessions never share a hub;
- port ``8765`` becomes a free port picked for the session;
- a prompt id the output already bound (below), or a 4+ character prefix of one,
  becomes the real id (or the same-length prefix of it).

Output lines are compared with these placeholders:

- a 16-hex prompt id is bound: the first time expected id E meets real id A, E stands
  for A in the rest of the session (in output and in commands);
- timestamps (ISO or log style), numbers of 4+ digits (pids, ports, epoch seconds)
  and ages (``2s``, ``in 4m``, ``in 23h``) match any such value;
- an absolute path matches any absolute path with the same last component;
- runs of whitespace compare equal (``list`` pads its columns to the widths);
- a line ``...`` matches any number of lines, and ``...`` inside a line any text;
- a line starting ``^C``: the command is interrupted there with SIGINT (once the
  output before it has been printed); the rest of the line is what follows.

Markers, HTML comments on the lines right before a fence:

- ``<!-- transcript: not run: REASON -->`` skips the block (REASON is required and
  printed); keep these few and honest;
- ``<!-- transcript: new session -->`` starts a fresh session (temp root, hub, ids);
- ``<!-- transcript: setup: COMMAND -->`` runs COMMAND first, unseen, in the session
  (it must succeed).  ``hvdoc_answer QUESTION -- ARGS...`` starts, in the background,
  the "other shell" of the docs: it answers QUESTION with ``hive-rpc answer ID ARGS``
  as soon as it is asked (``tests/doc_transcript_helper.py``), with ``--kill-hub``
  before ``--`` after killing the hub with SIGKILL;
  ``hvdoc_call METHOD JSON`` makes one socket call (``hive/reportResult``);
  ``hvdoc_kill_when_awaited QUESTION`` kills the hub (SIGKILL) once a command
  waits on QUESTION's prompt; ``hvdoc_stop_hub`` stops the hub of the current
  socket; ``hvdoc_tmux`` starts a private tmux server with panes %0 and %1 running
  ``cat`` and sets TMUX and TMUX_PANE as in pane %1;
- ``<!-- transcript: background -->``: the block's one command keeps running (a hub
  in the foreground of "another terminal"); the session goes on once its output
  matched.

When a block fails, the message gives the doc's file:line, the command, and the
expected and actual output: fix the doc if it is wrong, the program if it is.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HELPER = Path(__file__).resolve().parents[1] / "doc_transcript_helper.py"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Generous: a stuck command fails the test instead of hanging it (HVDOC_DEADLINE_S=10
# makes a doc writer's failing run quicker).
DEADLINE_S = float(os.environ.get("HVDOC_DEADLINE_S", "60"))
MARKER = re.compile(r"^\s*<!-- transcript: (.*?) -->\s*$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)")


@dataclass
class Command:
    line: int
    text: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    path: Path
    line: int
    commands: list[Command]
    markers: list[str]

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def not_run(self) -> str | None:
        for m in self.markers:
            if m.startswith("not run"):
                return m.partition(":")[2].strip()
        return None


def parse(path: Path) -> tuple[list[Block], list[str]]:
    """The transcript blocks of a doc, and the problems with its markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    problems: list[str] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, ticks = fence.group(1), fence.group(2)
        start = i
        body: list[tuple[int, str]] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(ticks):
            text = lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i].lstrip()
            body.append((i + 1, text))
            i += 1
        i += 1
        markers: list[str] = []
        j = start - 1
        while j >= 0 and (m := MARKER.match(lines[j])):
            markers.insert(0, m.group(1).strip())
            j -= 1
        commands: list[Command] = []
        continued = False
        for number, text in body:
            if continued:
                commands[-1].text += "\n" + text
                continued = text.endswith("\\")
            elif text.startswith("$ "):
                commands.append(Command(number, text[2:]))
                continued = text.endswith("\\")
            elif commands:
                commands[-1].expected.append(text)
        where = f"{path.relative_to(ROOT)}:{start + 1}"
        if markers and not commands:
            problems.append(f"{where}: transcript marker on a block without `$ ` lines")
        for marker in markers:
            kind = marker.partition(":")[0].strip()
            if kind not in {"not run", "new session", "setup", "background"}:
                problems.append(f"{where}: unknown transcript marker {marker!r}")
            if kind == "not run" and not marker.partition(":")[2].strip():
                problems.append(f"{where}: `not run` needs a reason")
            if kind == "background" and len(commands) != 1:
                problems.append(f"{where}: `background` needs a block of one command")
        if commands:
            blocks.append(Block(path, start + 1, commands, markers))
    return blocks, problems


# -- matching ------------------------------------------------------------------

_TOKEN = re.compile(
    r"(?P<dots>\.\.\.)"
    r"|(?P<time>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?: ?(?:[+-]\d\d:?\d\d|Z))?)"
    r"|(?P<httpdate>[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT)"
    r"|(?P<path>(?<![\w/.:~])/[\w.@%+~-]+(?:/[\w.@%+~-]+)*)"
    r"|(?P<num>(?<![\w.])\d{4,}(?:\.\d+)?(?![\w.]))"
    r"|(?P<hex>(?<![0-9A-Za-z])[0-9a-f]{4,16}(?![0-9A-Za-z]))"
    r"|(?P<age>(?<![\w.])\d+[smh](?![\w.]))"
)


def _squash(line: str) -> str:
    return " ".join(line.split())


def _prefix_of(hex_text: str, bindings: dict[str, str]) -> str | None:
    """The real text for an expected id or id prefix, if its id is bound."""
    if hex_text in bindings:
        return bindings[hex_text]
    if len(hex_text) < 16:
        for expected, actual in bindings.items():
            if expected.startswith(hex_text):
                return actual[: len(hex_text)]
    return None


def _line_pattern(expected: str, bindings: dict[str, str]) -> tuple[re.Pattern[str], list[str]]:
    parts: list[str] = []
    unbound: list[str] = []
    pos = 0
    for m in _TOKEN.finditer(expected):
        parts.append(re.escape(expected[pos : m.start()]))
        pos = m.end()
        text = m.group()
        if m.lastgroup == "dots":
            parts.append(".*?")
        elif m.lastgroup == "time":
            parts.append(
                r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?: ?(?:[+-]\d\d:?\d\d|Z))?"
            )
        elif m.lastgroup == "httpdate":
            parts.append(r"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT")
        elif m.lastgroup == "path":
            last = text.rstrip("/").rsplit("/", 1)[-1]
            parts.append(r"(?:/[^\s'\"()\[\],;]*)?/" + re.escape(last))
        elif m.lastgroup == "hex":
            real = _prefix_of(text, bindings)
            if real is not None:
                parts.append(re.escape(real))
            elif len(text) == 16 and text not in unbound:
                unbound.append(text)
                parts.append(f"(?P<id{len(unbound) - 1}>[0-9a-f]{{16}})")
            elif len(text) == 16:
                parts.append(f"(?P=id{unbound.index(text)})")
            elif text.isdigit():
                parts.append(r"\d+(?:\.\d+)?")
            else:
                parts.append(re.escape(text))
        elif m.lastgroup == "age":
            parts.append(r"\d+[smh]")
        else:
            parts.append(r"\d+(?:\.\d+)?")
    parts.append(re.escape(expected[pos:]))
    return re.compile("".join(parts)), unbound


def _match_line(expected: str, actual: str, bindings: dict[str, str]) -> dict[str, str] | None:
    pattern, unbound = _line_pattern(_squash(expected), bindings)
    m = pattern.fullmatch(_squash(actual))
    if m is None:
        return None
    new = dict(bindings)
    taken = set(bindings.values())
    for n, expected_id in enumerate(unbound):
        real = m.group(f"id{n}")
        if real in taken:
            return None  # one real id cannot stand for two ids of the docs
        new[expected_id] = real
        taken.add(real)
    return new


def match(
    expected: list[str], actual: list[str], bindings: dict[str, str]
) -> dict[str, str] | None:
    """The bindings after matching, or None if the output does not match."""

    def go(i: int, j: int, b: dict[str, str]) -> dict[str, str] | None:
        if i == len(expected):
            return b if j == len(actual) else None
        if expected[i].strip() == "...":
            for k in range(j, len(actual) + 1):
                if (r := go(i + 1, k, b)) is not None:
                    return r
            return None
        if j == len(actual):
            return None
        nb = _match_line(expected[i], actual[j], b)
        return None if nb is None else go(i + 1, j + 1, nb)

    return go(0, 0, bindings)


def _trim(lines: list[str]) -> list[str]:
    lines = [line.rstrip() for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


# -- the shell session ------------------------------------------------------------

_PRELUDE = r"""
set -m
hvdoc_status() { return "$1"; }  # so that `echo $?` sees the previous command's status
hvdoc_helper() { "$HVDOC_PY" "$HVDOC_HELPER" "$@" >>"$HVDOC_ROOT/helper.log" 2>&1 & }
hvdoc_answer() { hvdoc_helper answer "$@"; }
hvdoc_call() { "$HVDOC_PY" "$HVDOC_HELPER" call "$@"; }
hvdoc_kill_when_awaited() { hvdoc_helper kill-when-awaited "$@"; }
hvdoc_tmux() {  # a tmux server of two panes running cat, this shell "in" its pane %1
  local sock="$HVDOC_ROOT/tmux/default"
  mkdir -p -m 700 "$HVDOC_ROOT/tmux"
  tmux -S "$sock" new-session -d -s agents -x 80 -y 24 cat \; split-window cat || return 1
  export TMUX="$sock,$(tmux -S "$sock" display -p '#{pid}'),0" TMUX_PANE=%1
}
hvdoc_stop_hub() {
  local pid
  pid=$(hive-rpc status --json --no-start |
        "$HVDOC_PY" -c 'import json, sys; print(json.load(sys.stdin)["pid"])') || return 1
  kill "$pid" && while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}
"""


def _default_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


class Session:
    """One bash fed command by command; each command's output goes to its own file."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="hvt-", dir="/tmp"))
        (self.root / "run").mkdir(mode=0o700)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.root),
            "XDG_RUNTIME_DIR": str(self.root / "run"),
            "XDG_DATA_HOME": str(self.root / ".local" / "share"),
            "LANG": "C.UTF-8",
            "TZ": "UTC",
            "TERM": "dumb",
            "HVDOC_ROOT": str(self.root),
            "HVDOC_PY": sys.executable,
            "HVDOC_HELPER": str(HELPER),
        }
        if shutil.which("dbus-daemon"):  # a session bus, as on a desktop: the hub logs no fallback
            bus = subprocess.run(
                ["dbus-daemon", "--session", "--fork", "--print-address=1"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            env["DBUS_SESSION_BUS_ADDRESS"] = bus.stdout.strip()
        # curl writing to a terminal shows no progress meter; here it writes to a file
        (self.root / ".curlrc").write_text("--no-progress-meter\n")
        self.bindings: dict[str, str] = {}
        self.count = 0
        self.buffer = b""
        self.bash = subprocess.Popen(
            ["bash", "--norc", "--noprofile"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=self.root,
            env=env,
            start_new_session=True,
            # A shell started in the background (`cmd &` in a script, as CI runners and
            # nohup do) inherits SIGINT ignored, and bash cannot undo that: the `^C`
            # of an example would then stop nothing.  The docs show an interactive
            # terminal, where ^C interrupts.
            preexec_fn=_default_signals,
        )
        self._send(_PRELUDE)

    def rewrite(self, text: str) -> str:
        text = re.sub(r"(?<![\w/.~])/tmp/", f"{self.root}/tmp/", text)
        text = re.sub(r"\b8765\b", str(self.port), text)

        def real(m: re.Match[str]) -> str:
            return _prefix_of(m.group(), self.bindings) or m.group()

        return re.sub(r"(?<![0-9A-Za-z])[0-9a-f]{4,16}(?![0-9A-Za-z])", real, text)

    def _send(self, text: str) -> None:
        assert self.bash.stdin is not None
        self.bash.stdin.write(text.encode() + b"\n")
        self.bash.stdin.flush()

    def _sentinel(self) -> str:
        """Wait for the shell to print the sentinel line; return the rest of that line."""
        assert self.bash.stdout is not None
        token = f"__hvdoc_{self.count}__ "
        deadline = time.monotonic() + DEADLINE_S
        with selectors.DefaultSelector() as sel:
            sel.register(self.bash.stdout, selectors.EVENT_READ)
            while True:
                for line in self.buffer.decode(errors="replace").splitlines(keepends=True):
                    if line.startswith(token) and line.endswith("\n"):
                        self.buffer = b""
                        return line[len(token) :].strip()
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise TimeoutError(f"no end after {DEADLINE_S:g} s")
                chunk = os.read(self.bash.stdout.fileno(), 65536)
                if not chunk:
                    raise EOFError("the shell exited")
                self.buffer += chunk

    def _out(self, n: int) -> Path:
        return self.root / f"out.{n}"

    def helper_log(self) -> str:
        """What the background helpers said, for a failure report."""
        log = self.root / "helper.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        return f"  background helpers said:\n{text}" if text.strip() else ""

    def output(self, n: int) -> list[str]:
        try:
            text = self._out(n).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        return _trim(text.splitlines())

    def run(self, text: str) -> tuple[int, str]:
        """Run a command to its end: (its output file number, its exit status)."""
        self.count += 1
        n = self.count
        self._send(
            f"{{ {text}\n}} >{self._out(n)} 2>&1 </dev/null\n"
            f"hvdoc_rc=$?; printf '%s %s\\n' __hvdoc_{n}__ $hvdoc_rc; hvdoc_status $hvdoc_rc"
        )
        return n, self._sentinel()

    def start(self, text: str) -> tuple[int, int]:
        """Start a command in the background: (its output file number, its pid)."""
        self.count += 1
        n = self.count
        self._send(
            f"{{ {text}\n}} >{self._out(n)} 2>&1 </dev/null &\nprintf '%s %s\\n' __hvdoc_{n}__ $!"
        )
        return n, int(self._sentinel())

    def wait_for(self, n: int, expected: list[str]) -> dict[str, str] | None:
        """Wait (up to the deadline) until output file n matches ``expected``."""
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            if (b := match(expected, self.output(n), self.bindings)) is not None:
                return b
            time.sleep(0.05)
        return None

    def finish(self, pid: int) -> str:
        self.count += 1
        self._send(f"wait {pid}\nprintf '%s %s\\n' __hvdoc_{self.count}__ $?")
        return self._sentinel()

    def close(self) -> None:
        """Kill everything this session started (it all carries HVDOC_ROOT), then the root."""
        mark = f"HVDOC_ROOT={self.root}".encode()
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                environ = (proc / "environ").read_bytes()
            except OSError:
                continue
            if mark in environ.split(b"\0"):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(proc.name), signal.SIGKILL)
        self.bash.wait()
        for pipe in (self.bash.stdin, self.bash.stdout):
            if pipe is not None:
                pipe.close()
        shutil.rmtree(self.root, ignore_errors=True)


def _signal(pid: int, sig: int) -> None:
    """Signal a background job's process group (``set -m`` gave it its own)."""
    with contextlib.suppress(ProcessLookupError):  # it may have ended
        os.killpg(pid, sig)


class Broken(Exception):
    """A command did not end: the shell is stuck, so the session is over."""


def _report(block: Block, command: Command, text: str, actual: list[str], why: str) -> str:
    shown = "\n".join(f"    {line}" for line in command.expected) or "    (nothing)"
    got = "\n".join(f"    {line}" for line in actual) or "    (nothing)"
    return (
        f"{block.path.relative_to(ROOT)}:{command.line}: {why}\n"
        f"  $ {command.text}\n  (ran: {text})\n  expected:\n{shown}\n  actual:\n{got}\n"
    )


def run_block(session: Session, block: Block) -> list[str]:
    """Run one block; return a failure report per command that did not match."""
    failures: list[str] = []
    for marker in block.markers:
        if marker.startswith("setup:"):
            text = session.rewrite(marker.partition(":")[2].strip())
            n, status = session.run(text)
            if status != "0":
                return [
                    f"{block.where}: setup `{text}` exited {status}:\n"
                    + "\n".join(session.output(n))
                ]
    background = "background" in block.markers
    for command in block.commands:
        text = session.rewrite(command.text)
        expected = _trim(command.expected)
        cut = next((k for k, line in enumerate(expected) if line.startswith("^C")), None)
        if cut is None and not background:
            try:
                n, _ = session.run(text)
            except TimeoutError:
                actual = session.output(session.count)
                raise Broken(_report(block, command, text, actual, "did not end")) from None
        else:
            n, pid = session.start(text)
            before = expected if cut is None else _trim(expected[:cut])
            if session.wait_for(n, before) is None:
                failures.append(
                    _report(block, command, text, session.output(n), "no match in time")
                )
                _signal(pid, signal.SIGKILL)
                session.finish(pid)
                break
            if cut is not None:
                _signal(pid, signal.SIGINT)
                session.finish(pid)
                expected = _trim(
                    [
                        *before,
                        *([expected[cut][2:]] if expected[cut][2:] else []),
                        *expected[cut + 1 :],
                    ]
                )
        actual = session.output(n)
        bound = match(expected, actual, session.bindings)
        if bound is None:
            failures.append(_report(block, command, text, actual, "output differs"))
        else:
            session.bindings = bound
    return failures


def _sessions(blocks: list[Block]) -> Iterator[list[Block]]:
    current: list[Block] = []
    for block in blocks:
        if "new session" in block.markers and current:
            yield current
            current = []
        if block.not_run is None:
            current.append(block)
    if current:
        yield current


TRANSCRIPT_DOCS = [p for p in DOCS if parse(p)[0]]


def test_markers_are_well_formed_and_say_why_a_block_is_not_run() -> None:
    problems = [p for path in DOCS for p in parse(path)[1]]
    assert not problems, "\n".join(problems)
    skipped = [
        (b.where, b.not_run) for path in DOCS for b in parse(path)[0] if b.not_run is not None
    ]
    for where, reason in skipped:
        print(f"not run: {where}: {reason}")
    assert all(reason for _, reason in skipped)


@pytest.mark.parametrize("doc", TRANSCRIPT_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_shell_examples_print_what_the_docs_show(doc: Path) -> None:
    blocks, _ = parse(doc)
    text = " ".join(c.text for b in blocks if b.not_run is None for c in b.commands)
    text += " ".join(m for b in blocks if b.not_run is None for m in b.markers)
    for tool, used in [("tmux", "hvdoc_tmux"), ("jq", "jq "), ("curl", "curl ")]:
        if used in text and shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (Debian: apt-get install {tool})")
    failures: list[str] = []
    for group in _sessions(blocks):
        session = Session()
        found: list[str] = []
        try:
            for block in group:
                found += run_block(session, block)
        except Broken as e:
            found.append(str(e))
        except (TimeoutError, EOFError) as e:
            found.append(f"{doc.relative_to(ROOT)}: the session broke off: {e}")
        finally:
            if found:
                found.append(session.helper_log())
            session.close()
        failures += found
    assert not failures, "\n".join(failures)


# -- the comparison itself: it must be able to say no ------------------------------


def test_an_id_binds_once_and_its_prefixes_follow_it() -> None:
    b = match(["4def33f64a515938"], ["0a1b2c3d4e5f6a7b"], {})
    assert b == {"4def33f64a515938": "0a1b2c3d4e5f6a7b"}
    assert match(["no prompt '4def33f6'"], ["no prompt '0a1b2c3d'"], b) == b
    assert match(["4def33f64a515938"], ["ffffffffffffffff"], b) is None
    # one real id cannot stand for two ids of the docs
    assert match(["848d04de70efde31"], ["0a1b2c3d4e5f6a7b"], b) is None


def test_what_varies_matches_and_what_does_not_vary_must_be_equal() -> None:
    expected = [
        "hive-rpc 0.1.0 pid 15749",
        "socket   /tmp/hvdoc/hub.sock",
        "4def33f64a515938  deployer  1s   in 14m   Deploy?  [yes / no]",
        "at 2026-11-22T15:35:05+00:00; exit 4",
    ]
    actual = [
        "hive-rpc 0.1.0 pid 812",
        "socket /tmp/hvt-x/tmp/hvdoc/hub.sock",
        "0a1b2c3d4e5f6a7b deployer 0s in 2h Deploy? [yes / no]",
        "at 2026-11-24T05:01:00+00:00; exit 4",
    ]
    assert match(expected, actual, {}) is not None
    for n, wrong in [
        (1, "socket /tmp/hvt-x/hvdoc/other.sock"),
        (2, "0a1b2c3d4e5f6a7b deployer 0s in 2h Deploy? [yes / no / later]"),
        (3, "at 2026-11-24T05:01:00+00:00; exit 0"),
    ]:
        assert match(expected, [*actual[:n], wrong, *actual[n + 1 :]], {}) is None
    assert match(expected, actual[:-1], {}) is None  # a line missing
    assert match(expected, [*actual, "more"], {}) is None  # a line too many


def test_dots_match_any_lines_or_any_text() -> None:
    assert match(["a", "...", "z"], ["a", "z"], {}) is not None
    assert match(["a", "...", "z"], ["a", "b", "c", "z"], {}) is not None
    assert match(["a", "...", "z"], ["a", "b"], {}) is None
    assert match(['{"id":1,...,"ok":true}'], ['{"id":1,"x":2,"ok":true}'], {}) is not None
    assert match(['{"id":1,...,"ok":true}'], ['{"id":1,"x":2,"ok":false}'], {}) is None
