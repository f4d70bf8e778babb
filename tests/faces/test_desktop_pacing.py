"""The pacing rule of desktop notifications (faces/desktop_pacing.py), with the times
given as numbers: what it decides for a burst, a slow trickle and a loop of asks and
cancels, counted, never timed."""

from __future__ import annotations

from hive_rpc.faces.desktop_pacing import BURST, MAX_OPEN, SUMMARY_INTERVAL_S, WINDOW_S, Pacing


def test_a_burst_shows_three_and_holds_the_rest() -> None:
    pacing = Pacing()
    placed = [pacing.arrive(f"p{n}", now=0.0) for n in range(20)]
    assert placed == [True] * MAX_OPEN + [False] * (20 - MAX_OPEN)
    assert list(pacing.held) == [f"p{n}" for n in range(MAX_OPEN, 20)]
    assert pacing.grew


def test_answered_ones_free_their_place_but_held_ones_stay_held() -> None:
    pacing = Pacing()
    for n in range(4):
        pacing.arrive(f"p{n}", now=0.0)
    assert pacing.leave("p0") == "open"
    assert pacing.leave("p3") == "held"
    assert pacing.leave("p3") is None
    # p0's place is free, but three were raised in this window already.
    assert pacing.arrive("p4", now=WINDOW_S - 1) is False
    # A window later, the place and the rate allow one again.
    assert pacing.arrive("p5", now=WINDOW_S) is True
    assert "p4" in pacing.held  # never promoted


def test_a_loop_of_asks_and_cancels_raises_at_most_a_burst_per_window() -> None:
    pacing = Pacing()
    raised = []
    for n in range(120):  # an ask and its cancel every 0.25 s, for 30 s (three windows)
        now = n * 0.25
        if pacing.arrive(f"p{n}", now=now):
            raised.append(now)
        pacing.leave(f"p{n}")
    assert raised == [0.0, 0.25, 0.5, 10.0, 10.25, 10.5, 20.0, 20.25, 20.5]
    assert len(raised) == BURST * 3
    assert WINDOW_S == 10.0


def test_the_summary_is_sent_at_most_once_per_interval_and_sounds_when_it_grew() -> None:
    pacing = Pacing()
    for n in range(MAX_OPEN + 1):
        pacing.arrive(f"p{n}", now=0.0)
    assert pacing.summary_due(0.0) == 0.0
    assert pacing.summary_sent(0.0) is True  # it grew: it sounds
    assert pacing.summary_due(0.5) == SUMMARY_INTERVAL_S
    pacing.leave("p0")
    assert pacing.summary_sent(SUMMARY_INTERVAL_S) is False  # nobody joined: quiet
    pacing.arrive("p9", now=SUMMARY_INTERVAL_S)
    assert pacing.summary_sent(2 * SUMMARY_INTERVAL_S) is True
