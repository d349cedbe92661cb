"""kill -9 at random instants during every write path; see tests/crash_harness.py.

The default run does two loops per operation; ``-m slow`` runs 25 each. The long run
is ``scripts/crash-loop --loops N`` (figures in benchmarks/RELIABILITY.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..crash_harness import SCENARIOS, run_loop


@pytest.mark.crash
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_kill9(tmp_path: Path, scenario: str, seed: int) -> None:
    r = run_loop(scenario, tmp_path, seed)
    assert r.acked > 0
    assert r.ok, (r.lost, r.opened, r.detail)


@pytest.mark.crash
@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 125))
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_kill9_soak(tmp_path: Path, scenario: str, seed: int) -> None:
    r = run_loop(scenario, tmp_path, seed)
    assert r.ok, (r.lost, r.opened, r.detail)
