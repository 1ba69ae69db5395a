"""The benchmark harness's figures, spreads and verdicts (no timing is asserted)."""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from _harness import Bench, Figure, Result, Target, quartiles  # noqa: E402


def test_quartiles() -> None:
    assert quartiles([1.0, 2.0, 3.0, 4.0, 5.0]) == (2.0, 4.0)
    assert quartiles([7.0]) == (7.0, 7.0)


def test_a_median_keeps_its_runs_and_arithmetic_keeps_them() -> None:
    r = Result("g", "a", 1, [1.0, 2.0, 3.0, 4.0, 5.0])
    m = r.median
    assert m == 3.0 and (m.low, m.high) == (2.0, 4.0)
    scaled = 1000 * m
    assert isinstance(scaled, Figure) and scaled == 3000.0 and scaled.low == 2000.0
    inverse = 1 / m
    assert isinstance(inverse, Figure) and inverse.high == pytest.approx(0.5)
    assert not isinstance(m + 1, Figure)


def test_one_comparisons_ratio_pairs_runs_by_round() -> None:
    bench = Bench("t", True, 5)
    bench.record("g", 1, {"fast": [1.0, 1.0, 1.0, 9.0, 1.0], "slow": [2.0, 2.0, 2.0, 18.0, 2.0]})
    ratio = bench.ratio("g", "slow", "fast", 1)
    # The slow round was slow for both: paired by round the ratio is exactly 2 every round.
    assert ratio == 2.0 and (ratio.low, ratio.high) == (2.0, 2.0)
    assert ratio.floor == "fast"


def test_unpaired_results_take_every_pair() -> None:
    a = Result("g", "a", 1, [1.0, 2.0, 3.0, 4.0, 5.0])
    b = Result("g", "b", 1, [1.0, 1.0, 1.0, 1.0, 2.0])
    ratio = a.median / b.median
    assert isinstance(ratio, Figure) and len(ratio.samples) == 25
    assert ratio.low < 3.0 < ratio.high


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (1.2, 1.8, "met"),
        (2.2, 3.0, "missed"),
        (1.5, 2.5, "noisy"),
        (None, None, "met"),
    ],
    ids=["under", "over", "straddles", "no-spread"],
)
def test_a_spread_that_straddles_the_bound_is_too_noisy_to_judge(
    low: float | None, high: float | None, verdict: str
) -> None:
    median = (low + high) / 2 if low is not None and high is not None else 1.0
    t = Target("t", median, 2.0, "<=", low=low, high=high)
    assert t.verdict == verdict


def test_targets_take_the_spread_and_floor_of_a_figure_and_serialize() -> None:
    bench = Bench("t", True, 5)
    bench.record("g", 1, {"floor": [1.0] * 5, "subject": [1.0, 1.5, 2.0, 2.5, 3.0]})
    t = bench.target("subject / floor", bench.ratio("g", "subject", "floor", 1), "<=", 2)
    assert (t.low, t.high, t.floor) == (1.5, 2.5, "floor")
    assert t.verdict == "noisy"
    bench.skip("the corpus", "corpus not found at /nowhere")
    data = json.loads(json.dumps(bench.to_json()))
    assert data["targets"][0]["verdict"] == "noisy"
    assert data["skipped"] == {"the corpus": "corpus not found at /nowhere"}
    assert len(data["load"]["start"]) == 3
    assert pickle.loads(pickle.dumps(bench.ratio("g", "subject", "floor", 1))).low == 1.5
