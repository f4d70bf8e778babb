"""With the opt-in ``hive.autoAsk`` (test_vscode_attention.py tests the default: nothing
opens by itself), a question still never takes the keyboard mid-sentence, and its input
box says what its keys do.

A real VS Code (code-server) with ``hive.autoAsk`` on (the test harness's setting) and
its default ``hive.idleSeconds`` (2), a real hub, and a person typing at a person's pace.
Seen before the fix: the user
was writing a sentence in a file, a question grabbed focus, the rest of the sentence
went into the answer box, and Enter sent it to the agent. Now a question that arrives
while the user types waits, announced by a notification (which takes no focus), and
opens once they have stopped typing for two seconds."""

from __future__ import annotations

import subprocess
import sys

from vscode_session import Hub, Window

SENTENCE_START = "The quick "
SENTENCE_END = "brown fox jumps over the lazy dog."
HUMAN_PACE_MS = 150
"""Between two keys: a steady typist, never two seconds of pause."""


def ask_in_background(hub: Hub, question: str, *options: str) -> subprocess.Popen[str]:
    """``hive-rpc ask`` started without waiting for it: the human goes on typing."""
    argv = [sys.executable, "-m", "hive_rpc", "ask", question, *options]
    return subprocess.Popen(
        [*argv, "--socket", str(hub.socket), "--no-start"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=hub.root,
    )


def test_a_sentence_typed_while_a_question_arrives_stays_in_the_file(
    window: Window, vscode_hub: Hub
) -> None:
    sentence = window.server.workspace / "sentence.txt"
    sentence.write_text("")
    window.open_file("sentence.txt")
    window.type_human(SENTENCE_START, HUMAN_PACE_MS)
    asking = ask_in_background(
        vscode_hub, "Which branch?", "--timeout", "300", "--agent", "deployer"
    )
    window.type_human(SENTENCE_END, HUMAN_PACE_MS)
    out, _ = asking.communicate(timeout=60)
    ask_id = out.strip()
    assert asking.returncode == 0, out
    assert ask_id
    # While the human typed, no box: the question is announced without focus.
    assert window.quick_input() is None, window.describe()
    notices = window.notifications()
    assert any(n.startswith("Hive: deployer (") and "asks: Which branch?" in n for n in notices), (
        window.describe()
    )
    window.shot("typed-while-asked")
    window.press("Control+S")
    window.wait(lambda: sentence.read_text() != "", "the file to be saved")
    assert sentence.read_text() == SENTENCE_START + SENTENCE_END
    record = vscode_hub.record(ask_id)
    assert record["status"] == "pending", record
    assert record["typing_at"] is None, "nothing was typed into the question"
    # Once the human stops, the box opens by itself; the answer is typed knowingly.
    box = window.wait_quick_input("Which branch?", "the box, once the human stopped typing")
    assert box.title.startswith("Agent deployer ("), box
    assert box.title.endswith(") needs input"), box
    assert box.message == "Which branch? (Enter answers, Escape defers)", box
    window.shot("opened-when-idle")
    window.type_human("main")
    window.press("Enter")
    window.wait_no_quick_input()
    done = vscode_hub.poll(ask_id)
    assert (done.returncode, done.stdout.strip()) == (0, "main"), done
    assert sentence.read_text() == SENTENCE_START + SENTENCE_END


def test_the_input_box_says_escape_defers_and_a_problem_never_hides_the_question(
    window: Window, vscode_hub: Hub
) -> None:
    # VS Code's own line under the input is "QUESTION (Press 'Enter' to confirm or
    # 'Escape' to cancel)", and a validation message replaces it, question and all.
    schema = '{"type": "object", "properties": {"replicas": {"type": "integer", "maximum": 10}}}'
    ask_id = vscode_hub.ask("How many replicas?", "--schema", schema, "--agent", "deployer")
    box = window.wait_quick_input("How many replicas?")
    assert box.message == "How many replicas? (replicas, optional) (Enter answers, Escape defers)"
    window.shot("input-box-message")
    window.type_human("many")
    box = window.wait_quick_input("wants an integer", "the field's complaint")
    assert box.message == (
        "replicas wants an integer — How many replicas? (replicas, optional) "
        "(Enter answers, Escape defers)"
    ), box
    window.shot("input-box-problem")
    window.press("Control+A")
    window.type_human("3")
    window.wait(
        lambda: (b := window.quick_input()) is not None and "wants" not in b.message,
        "the complaint to go",
    )
    window.press("Enter")
    window.wait_no_quick_input()
    assert vscode_hub.record(ask_id)["answer"] == {"replicas": 3}
