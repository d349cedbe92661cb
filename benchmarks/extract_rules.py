"""Precision and recall of ``RuleExtractor`` on the hand-labelled dev statements
(tests/agentmem/extract_labels.py: the labels and how a candidate is scored), and its
speed in statements per second.

    python benchmarks/extract_rules.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentzero_store.agentmem.extract.rules import RuleExtractor, sentences  # noqa: E402
from tests.agentmem.extract_labels import LABELS, score  # noqa: E402


def main() -> None:
    p, r, tp, cands, labels = score()
    print(f"statements {len(LABELS)}  labels {labels}  candidates {cands}  right {tp}")
    print(f"precision {p:.3f}  recall {r:.3f}")
    ex = RuleExtractor()
    start = time.perf_counter()
    n = 0
    while time.perf_counter() - start < 2.0:
        for _, statement, _ in LABELS:
            for s in sentences(statement):
                ex.statement(s, "U", ("t",))
            n += 1
    print(f"rules: {n / (time.perf_counter() - start):,.0f} statements/s")


if __name__ == "__main__":
    main()
