"""kill -9 at random instants during every write path; see tests/support/crash_harness.py.

The default run does two loops per operation; ``-m slow`` runs 25 each. The long run
is ``scripts/crash-loop --loops N`` (figures in benchmarks/RELIABILITY.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.crash_harness import DAMAGES, SCENARIOS, run_damage_loop, run_loop


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


DAMAGE_CASES = [(s, d) for s, ds in sorted(DAMAGES.items()) for d in ds]


@pytest.mark.crash
@pytest.mark.parametrize(("scenario", "damage"), DAMAGE_CASES)
def test_kill9_then_source_damage_is_detected_never_silent(
    tmp_path: Path, scenario: str, damage: str
) -> None:
    r = run_damage_loop(scenario, damage, tmp_path, seed=7)
    assert r.acked > 0
    assert r.ok, (r.lost, r.overwritten, r.detail)
    if damage in ("db_deleted", "log_deleted", "log_emptied"):
        assert r.detected, r.detail  # acknowledged data was there: its loss must show


@pytest.mark.crash
@pytest.mark.slow
@pytest.mark.parametrize("seed", range(200, 215))
@pytest.mark.parametrize(("scenario", "damage"), DAMAGE_CASES)
def test_kill9_then_source_damage_soak(
    tmp_path: Path, scenario: str, damage: str, seed: int
) -> None:
    r = run_damage_loop(scenario, damage, tmp_path, seed)
    assert r.ok, (r.lost, r.overwritten, r.detail)
