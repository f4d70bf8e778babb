"""Agora dialogue rules (core/dialogue.py): examples, then properties over random games."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hive_rpc.core import dialogue as dlg
from hive_rpc.core.errors import InvalidParams, NotAParticipant
from hive_rpc.core.messages import agora_turn, answer, child_event

A, B, C = "main.a", "main.b", "main.c"


def new(*participants: str, max_turns: int = 50) -> dlg.Dialogue:
    return dlg.new_dialogue("Which cache?", list(participants), now=0.0, max_turns=max_turns)


def turn(d: dlg.Dialogue, sender: str, to: str, signal: str) -> tuple[dlg.Dialogue, dlg.Outcome]:
    d, _turn, outcome = dlg.dispatch(
        d, sender=sender, to=to, signal=signal, message=f"{signal} from {sender}", now=1.0
    )
    return d, outcome


def test_propose_then_approve_is_consensus_between_two() -> None:
    d = new(A, B)
    d, outcome = turn(d, A, B, "propose")
    assert (outcome, d.status) == (dlg.Outcome.RELAY, dlg.Status.ACTIVE)
    d, outcome = turn(d, B, A, "approve")
    assert (outcome, d.status) == (dlg.Outcome.CONSENSUS, dlg.Status.CONSENSUS)
    assert d.end_reason == "every participant approves"


def test_a_counter_resets_earlier_approvals() -> None:
    d = new(A, B, C)
    d, _ = turn(d, A, B, "propose")
    d, _ = turn(d, B, C, "approve")
    d, outcome = turn(d, C, A, "counter")  # C's alternative: A and B must speak again
    assert outcome is dlg.Outcome.RELAY
    assert dlg.stances(d) == {
        A: dlg.Stance.UNDECIDED,
        B: dlg.Stance.UNDECIDED,
        C: dlg.Stance.AGREE,
    }
    d, outcome = turn(d, A, B, "approve")
    assert outcome is dlg.Outcome.RELAY
    d, outcome = turn(d, B, C, "no-change")
    assert outcome is dlg.Outcome.CONSENSUS


def test_consensus_needs_a_full_round() -> None:
    d = new(A, B, C)
    d, _ = turn(d, A, B, "no-change")
    d, outcome = turn(d, B, A, "approve")
    assert outcome is dlg.Outcome.RELAY  # C has not spoken yet
    d, outcome = turn(d, C, A, "approve")
    assert outcome is dlg.Outcome.CONSENSUS


def test_defer_counts_toward_consensus_but_cannot_make_one_alone() -> None:
    d = new(A, B)
    d, _ = turn(d, A, B, "defer")
    d, outcome = turn(d, B, A, "defer")
    assert outcome is dlg.Outcome.RELAY  # nobody agreed to anything
    d, outcome = turn(d, A, B, "approve")
    assert outcome is dlg.Outcome.CONSENSUS  # A agrees, B yields


def test_max_turns_ends_the_dialogue_as_timeout() -> None:
    d = new(A, B, max_turns=3)
    d, _ = turn(d, A, B, "propose")
    d, _ = turn(d, B, A, "counter")
    d, outcome = turn(d, A, B, "counter")
    assert (outcome, d.status) == (dlg.Outcome.MAX_TURNS, dlg.Status.TIMEOUT)
    with pytest.raises(dlg.DialogueClosed, match="is timeout"):
        turn(d, B, A, "approve")


def test_refusals_say_what_is_wrong() -> None:
    d = new(A, B)
    with pytest.raises(NotAParticipant, match=r"'main\.z' is not a participant") as e:
        turn(d, A, "main.z", "propose")
    assert e.value.data["event"] == "agora/not-a-participant"
    with pytest.raises(NotAParticipant, match=r"from 'main\.z'"):
        turn(d, "main.z", A, "propose")
    with pytest.raises(InvalidParams, match="not to its sender"):
        turn(d, A, A, "propose")
    with pytest.raises(InvalidParams, match="signal 'maybe' is not one of propose, counter"):
        turn(d, A, B, "maybe")
    with pytest.raises(InvalidParams, match="message must not be empty"):
        dlg.dispatch(d, sender=A, to=B, signal="propose", message="  ", now=1.0)
    aborted = dlg.abort(d, reason="wrong room", now=2.0)
    with pytest.raises(dlg.DialogueClosed, match="aborted"):
        turn(aborted, A, B, "propose")


@pytest.mark.parametrize(
    ("topic", "participants", "why"),
    [
        ("", [A, B], "topic must not be empty"),
        ("t", [A], "2 to 16"),
        ("t", [A, A], "distinct"),
        ("t", [A, "bad name!"], "not a ling name"),
        ("t", [A, "a..b"], "not a ling name"),
    ],
)
def test_new_dialogue_checks_its_input(topic: str, participants: list[str], why: str) -> None:
    with pytest.raises(InvalidParams, match=why):
        dlg.new_dialogue(topic, participants, now=0.0)


def test_records_round_trip() -> None:
    d = new(A, B)
    d, _ = turn(d, A, B, "propose")
    d = dlg.with_delivery(d, 1, {"state": "delivered", "reason": ""})
    assert dlg.Dialogue.from_record(d.record()) == d
    assert d.record()["turns"][0]["delivery"] == {"state": "delivered", "reason": ""}


# --- absent participants (issue 14) ---------------------------------------------------


def test_absent_participants_do_not_count_toward_consensus() -> None:
    d = dlg.mark_absent(new(A, B, C), [C])
    d, outcome = turn(d, A, B, "propose")
    assert outcome is dlg.Outcome.RELAY
    d, outcome = turn(d, B, A, "approve")
    assert outcome is dlg.Outcome.CONSENSUS  # C never spoke, and need not
    assert d.end_reason == "every present participant approves (main.c absent)"


def test_consensus_still_takes_two_present_participants() -> None:
    d = dlg.mark_absent(new(A, B, C), [B, C])
    d, outcome = turn(d, A, B, "propose")
    assert outcome is dlg.Outcome.RELAY
    assert not dlg.is_consensus(d)


def test_holdouts_are_the_only_ones_between_the_dialogue_and_consensus() -> None:
    d = new(A, B, C)
    assert dlg.holdouts(d) == ()  # nobody agreed to anything yet
    d, _ = turn(d, A, B, "propose")
    assert dlg.holdouts(d) == (B, C)
    d, _ = turn(d, B, A, "approve")
    assert dlg.holdouts(d) == (C,)
    d, _ = turn(d, C, A, "counter")
    assert dlg.holdouts(d) == (A, B)  # the counter reset A's and B's stances
    d = new(A, B)
    d, _ = turn(d, A, B, "defer")
    assert dlg.holdouts(d) == ()  # a yield alone is no near-consensus


def test_two_failed_deliveries_in_a_row_make_the_receiver_absent() -> None:
    d = new(A, B, C)
    d, _ = turn(d, A, C, "propose")
    failed = {"state": "failed", "ling": C, "reason": "held by a dialog"}
    d, gone = dlg.note_delivery(d, 1, failed)
    assert (gone, d.absent, d.record()["failed_deliveries"]) == (False, (), {C: 1})
    d, _ = turn(d, B, C, "approve")
    d, gone = dlg.note_delivery(d, 2, {"state": "delivered", "ling": C})
    assert (gone, d.record()["failed_deliveries"]) == (False, {})  # reached: count again
    d, _ = turn(d, A, C, "approve")
    d, gone = dlg.note_delivery(d, 3, failed)
    d, _ = turn(d, B, C, "approve")
    d, gone = dlg.note_delivery(d, 4, failed)
    assert (gone, d.absent) == (True, (C,))
    assert dlg.conclude(d, now=2.0)[1] is dlg.Outcome.CONSENSUS  # A and B agree


@pytest.mark.parametrize(
    ("state", "absent"), [("not-relayed", True), ("queued", False), ("delivered", False)]
)
def test_presence_table(state: str, absent: bool) -> None:
    d, _ = turn(new(A, B), A, B, "propose")
    d, gone = dlg.note_delivery(d, 1, {"state": state, "ling": B})
    assert (gone, B in d.absent) == (absent, absent)


def test_an_absent_participant_rejoins_by_taking_a_turn() -> None:
    d = dlg.mark_absent(new(A, B, C), [C])
    d, _t, rejoined = dlg.take_turn(d, sender=C, to=A, signal="propose", message="m", now=1.0)
    assert (rejoined, d.absent) == (True, ())
    d, _t, rejoined = dlg.take_turn(d, sender=A, to=C, signal="approve", message="m", now=1.0)
    assert rejoined is False


def test_absences_and_the_coordinator_round_trip() -> None:
    d = dlg.new_dialogue("t", [A, B, C], now=0.0, coordinator="lead")
    d, _ = turn(d, A, C, "propose")
    d, _ = dlg.note_delivery(d, 1, {"state": "failed", "ling": C})
    d = dlg.mark_absent(d, [B])
    assert dlg.Dialogue.from_record(d.record()) == d
    assert (d.record()["coordinator"], d.record()["absent"]) == ("lead", [B])
    old = d.record()
    for key in ("coordinator", "absent", "failed_deliveries"):  # kept before issue 14
        del old[key]
    assert dlg.Dialogue.from_record(old).absent == ()


# --- properties over random games ---------------------------------------------------

names = [f"main.l{i}" for i in range(4)]
games = st.integers(2, 4).flatmap(
    lambda n: st.tuples(
        st.just(names[:n]),
        st.lists(
            st.tuples(
                st.integers(0, n - 1), st.integers(1, n - 1), st.sampled_from(list(dlg.Signal))
            ),
            max_size=40,
        ),
        st.integers(1, 30),
    )
)


def play(participants: list[str], moves: list[tuple[int, int, dlg.Signal]], max_turns: int):  # type: ignore[no-untyped-def]
    d = dlg.new_dialogue("t", participants, now=0.0, max_turns=max_turns)
    outcomes = []
    for i, step, signal in moves:
        if d.status is not dlg.Status.ACTIVE:
            break
        sender = participants[i]
        to = participants[(i + step) % len(participants)]
        d, outcome = turn(d, sender, to, signal.value)
        outcomes.append(outcome)
    return d, outcomes


@given(games)
def test_property_a_dialogue_ends_once_and_only_as_its_rules_say(game) -> None:  # type: ignore[no-untyped-def]
    participants, moves, max_turns = game
    d, outcomes = play(participants, moves, max_turns)
    # at most the last outcome ends it, and the status matches it
    assert all(o is dlg.Outcome.RELAY for o in outcomes[:-1])
    assert len(d.turns) <= max_turns
    if outcomes and outcomes[-1] is dlg.Outcome.CONSENSUS:
        assert d.status is dlg.Status.CONSENSUS
        assert {t.sender for t in d.turns} == set(participants)  # a full round
        last_reset = max((t.number for t in d.turns if dlg.SIGNALS[t.signal].resets), default=0)
        for p in participants:
            spoke_after = [t for t in d.turns if t.sender == p and t.number >= last_reset]
            assert spoke_after, f"{p} was undecided"
        assert any(
            dlg.SIGNALS[t.signal].stance is dlg.Stance.AGREE
            for t in d.turns
            if t.number >= last_reset
        )
    elif outcomes and outcomes[-1] is dlg.Outcome.MAX_TURNS:
        assert d.status is dlg.Status.TIMEOUT
        assert len(d.turns) == max_turns
    else:
        assert d.status is dlg.Status.ACTIVE
        assert not dlg.is_consensus(d)


@given(games)
def test_property_a_reset_always_clears_consensus(game) -> None:  # type: ignore[no-untyped-def]
    """Right after a propose or counter, consensus needs everyone else to speak again
    (with three or more participants, the reset alone never ends the dialogue)."""
    participants, moves, max_turns = game
    d, outcomes = play(participants, moves, max_turns)
    if len(participants) >= 3 and d.turns and dlg.SIGNALS[d.turns[-1].signal].resets:
        assert outcomes[-1] is not dlg.Outcome.CONSENSUS


# --- the text typed into terminals ----------------------------------------------------


def test_agora_turn_text_follows_the_seed_template() -> None:
    d = new(A, B, C)
    d, t, _ = dlg.dispatch(d, sender=A, to=B, signal="propose", message="Use Redis.", now=1.0)
    text = agora_turn(d, t)
    assert text.startswith("---\nAGORA DIALOGUE CONTEXT\n")
    assert f"Dialogue ID: {d.id}\nFrom: {A}\nTopic: Which cache?\n" in text
    assert f'- dialogue_id: "{d.id}"\n- to: "{A}" (or another participant: {C})' in text
    assert f'- sender: "{B}"\n' in text
    assert "Signals: propose/counter=reset equilibrium, approve/no-change=toward consensus" in text
    assert text.endswith("---\n\nUse Redis.")


CONSENSUS_RULE = (
    "Consensus: all have spoken and, since the last propose/counter, all others sent "
    "approve, no-change or defer."
)


def test_agora_turn_text_between_two_says_the_rule_the_code_applies() -> None:
    """Issue 14: the text said "when all participants signal approve/no-change" while
    the code counts a proposer as agreeing, and told two-party dialogues "(or another
    participant: none)"."""
    d = new(A, B)
    d, t, _ = dlg.dispatch(d, sender=A, to=B, signal="propose", message="Use Redis.", now=1.0)
    assert agora_turn(d, t) == (
        "---\n"
        "AGORA DIALOGUE CONTEXT\n"
        f"Dialogue ID: {d.id}\n"
        "From: main.a\n"
        "Topic: Which cache?\n"
        "Turn: 1 of at most 50\n"
        "\n"
        "You are in a Nash Equilibrium dialogue. Respond via agora_dispatch:\n"
        f'- dialogue_id: "{d.id}"\n'
        '- to: "main.a"\n'
        "- signal: [propose|counter|approve|no-change|defer]\n"
        '- sender: "main.b"\n'
        "\n"
        "Signals: propose/counter=reset equilibrium, approve/no-change=toward consensus\n"
        f"{CONSENSUS_RULE}\n"
        "---\n"
        "\n"
        "Use Redis."
    )
    # The rule as written is the rule applied: B's approve is all it takes.
    d, outcome = turn(d, B, A, "approve")
    assert outcome is dlg.Outcome.CONSENSUS


SEED_TEMPLATE = """---
AGORA DIALOGUE CONTEXT
Dialogue ID: %s
From: %s
Topic: %s

You are in a Nash Equilibrium dialogue. Respond via agora_dispatch:
- dialogue_id: "%s"
- to: "%s" (or another participant)
- signal: [propose|counter|approve|no-change|defer]

Signals: propose/counter=reset equilibrium, approve/no-change=toward consensus
---

%s"""
"""The seed's agora-context-template (../shared/seeds/001), word for word."""


def test_agora_turn_text_costs_the_receiver_about_what_the_seed_allows() -> None:
    """Issue 32: the context block was about 1,000 characters around each turn's
    message, against the seed's ~300 of overhead (its agora-context-template), and
    every character is read into the receiver's context at every turn.  What is
    left, besides the names, is the seed's template with the turn count, the name to
    send as, and the consensus rule."""
    d = dlg.new_dialogue("Which cache?", [A, B, C], now=1.0, dialogue_id="d-3c0f5e9a1b2c")
    d, t, _ = dlg.dispatch(d, sender=A, to=B, signal="propose", message="Use Redis.", now=1.0)
    text = agora_turn(d, t)
    names = len(d.id) * 2 + len(A) * 2 + len(B) + len(C) + len(d.topic) + len(t.message)
    seed = SEED_TEMPLATE % (d.id, A, d.topic, d.id, A, "")
    seed_overhead = len(seed) - (len(d.id) * 2 + len(A) * 2 + len(d.topic))
    assert seed_overhead == 314
    assert len(text) - names <= 1.5 * seed_overhead, len(text) - names  # was 3.3 times
    needed = [f"Dialogue ID: {d.id}", f"From: {A}", "Topic: Which cache?", f'- sender: "{B}"']
    needed += ["Turn: 1 of at most 50", "defer", CONSENSUS_RULE]
    assert [n for n in needed if n not in text] == []


def test_agora_turn_text_names_absent_participants_and_does_not_suggest_them() -> None:
    d = dlg.mark_absent(new(A, B, C, "main.d"), [C])
    d, t, _ = dlg.dispatch(d, sender=A, to=B, signal="propose", message="m", now=1.0)
    text = agora_turn(d, t)
    assert '- to: "main.a" (or another participant: main.d)\n' in text
    assert (f"{CONSENSUS_RULE}\nAbsent, not counted until they speak again: main.c\n---\n") in text


def test_child_event_texts_follow_the_seed() -> None:
    done = child_event(
        "child-complete",
        "auth-module",
        "main.feature.auth",
        {"pr": 42, "review": "approved", "ci": "passing"},
    )
    assert done == (
        "[CHILD COMPLETE] Agent 'auth-module' on branch main.feature.auth has completed.\n"
        "PR #42 filed against your branch. Copilot status: approved. CI: passing.\n"
        "Review with: gh pr view 42"
    )
    question = child_event(
        "child-question", "auth-module", "main.feature.auth", {"message": "Define types locally?"}
    )
    assert question == (
        "[QUESTION from auth-module] Define types locally?\n"
        'Reply with: answer_question agent=main.feature.auth message="..."'
    )
    assert answer("main.feature", " Yes. ") == "[ANSWER from main.feature] Yes."


@pytest.mark.parametrize(
    ("cause", "absent"),
    [("gone", True), ("held", False), ("refused", False), ("error", False), ("stopped", False)],
)
def test_a_failed_delivery_is_judged_by_its_cause(cause: str, absent: bool) -> None:
    """Issue 27, item 10: a receiver whose terminal is gone is absent at once."""
    d, _ = turn(new(A, B, C), A, B, "propose")
    d, gone = dlg.note_delivery(d, 1, {"state": "failed", "ling": B, "cause": cause})
    assert (gone, B in d.absent) == (absent, absent)


def test_after_a_receiver_is_gone_the_dialogue_goes_on_pauses_or_ends() -> None:
    gone = {"state": "failed", "ling": B, "cause": "gone", "reason": "tmux pane %3 is gone"}
    # Two participants: one alone is left, who cannot agree with anybody: paused.
    d, _ = turn(new(A, B), A, B, "propose")
    d, _ = dlg.note_delivery(d, 1, gone)
    d, outcome = dlg.after_absence(d, now=2.0)
    assert (outcome, d.status, d.ended_at) == (dlg.Outcome.PAUSED, dlg.Status.PAUSED, None)
    assert dlg.state_in_words(d).startswith(f"paused: {B} is absent and {A} alone cannot")
    text = dlg.undelivered_text(d, d.turns[0], gone)
    assert f"Your turn 1 to {B} (propose) was not delivered: tmux pane %3 is gone." in text
    # A paused dialogue takes turns: the turn makes it active again.
    d, outcome = turn(d, A, B, "propose")
    assert (outcome, d.status) == (dlg.Outcome.RELAY, dlg.Status.ACTIVE)
    # Three: the two left go on.
    d, _ = turn(new(A, B, C), A, B, "propose")
    d, _ = dlg.note_delivery(d, 1, gone)
    d, outcome = dlg.after_absence(d, now=2.0)
    assert (outcome, d.status) == (dlg.Outcome.RELAY, dlg.Status.ACTIVE)
    assert f"to another participant ({C})" in dlg.undelivered_text(d, d.turns[0], gone)
    # Three, the third agreed already: consensus between the two present.
    d, _ = turn(new(A, B, C), A, C, "propose")
    d, _ = turn(d, C, B, "approve")
    d, _ = dlg.note_delivery(d, 2, gone)
    d, outcome = dlg.after_absence(d, now=2.0)
    assert (outcome, d.status) == (dlg.Outcome.CONSENSUS, dlg.Status.CONSENSUS)
    assert dlg.consensus_summary(d) == (
        f'{A}\'s propose of turn 1 "propose from {A}", approved by {C} ({B} absent)'
    )
    closing = dlg.closing_text(d)
    assert f"The dialogue {d.id} ended in consensus: " in closing


def test_an_ended_dialogue_stays_as_it_is_after_an_absence() -> None:
    d = dlg.abort(new(A, B), reason="done", now=1.0)
    assert dlg.after_absence(d, now=2.0) == (d, dlg.Outcome.RELAY)
