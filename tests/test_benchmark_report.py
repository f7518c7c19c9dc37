"""The benchmark's judge of the refresh planner: what a choice under REFRESH POLICY AUTO is
charged with."""

import pytest

from benchmarks.report import _planner_table


def refreshes(auto_mode: str, auto_seconds: float, auto_phases: str) -> list[dict]:
    """One batch refreshed by the three copies of a view: applied in 3 s, recomputed in
    2 s, and by AUTO as given."""
    def row(kind, mode, seconds, phases):
        return {"scale": "1", "fraction": "0.001", "repetition": "0", "view": "q",
                "kind": kind, "mode": mode, "seconds": str(seconds), "phases": phases}
    return [row("incremental", "incremental", 3.0, "change=0.5/1 delta=1.0/4 write=1.5/4"),
            row("recompute", "full", 2.0, "write=2.0/9"),
            row("auto", auto_mode, auto_seconds, auto_phases)]


def verdict(rows: list[dict]) -> str:
    [line] = [line for line in _planner_table(rows) if line.startswith("| 1 |")]
    return line.rstrip(" |").rsplit("| ", 1)[1]


@pytest.mark.fast
def test_a_recompute_chosen_before_reading_the_change_is_charged_as_the_recompute():
    assert verdict(refreshes("full", 2.3, "versions=0.1/0 write=2.2/9")) == "yes"
    assert verdict(refreshes("incremental", 2.9, "change=0.5/1 delta=1.0/4")) == "no"


@pytest.mark.fast
def test_a_recompute_chosen_after_reading_the_change_is_charged_its_own_time():
    """The change read and the delta query planned are spent when the planner turns to a
    recompute: 1.5 s more than the recompute's 2 s is a miss."""
    assert verdict(refreshes("full", 3.5, "change=0.6/1 prune=0.2/1 delta=0.7/4 "
                                          "write=2.0/9")) == "no"
    assert verdict(refreshes("full", 2.3, "change=0.1/1 delta=0.1/1 write=2.1/9")) == "yes"
