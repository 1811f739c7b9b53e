"""Every numbered ruling of RULINGS.md sections 1 to 11 has a test named after it."""

from __future__ import annotations

import re
from pathlib import Path

RULINGS = (
    "1_1", "1_2", "1_3", "1_4", "1_5",
    "2",
    "3_1", "3_2", "3_3",
    "4_1", "4_2", "4_3", "4_4", "4_5", "4_6", "4_7", "4_8", "4_9",
    "5_1", "5_2", "5_3",
    "6_1", "6_2", "6_3",
    "7_1", "7_2", "7_3",
    "8_1", "8_2",
    "9_1", "9_2", "9_3",
    "10",
    "11",
)
"""The rulings as numbered in RULINGS.md (sections 2, 10 and 11 are unnumbered lists)."""

SECTION_2_CARDS = ("2", "4", "5", "6", "7", "8", "9", "10", "jack", "queen_of_spades", "king")


def rule_test_names() -> list[str]:
    names: list[str] = []
    for path in Path(__file__).parent.glob("test_engine_*.py"):
        names += re.findall(r"^def (test_rule_\w+)\(", path.read_text(), flags=re.MULTILINE)
    return names


def test_every_ruling_has_a_test_named_after_it() -> None:
    names = rule_test_names()
    missing = [r for r in RULINGS if not any(n.startswith(f"test_rule_{r}_") for n in names)]
    assert missing == []


def test_every_turned_up_card_of_section_2_has_a_test() -> None:
    names = [n for n in rule_test_names() if n.startswith("test_rule_2_")]
    missing = [c for c in SECTION_2_CARDS if not any(f"_turned_up_{c}_" in n for n in names)]
    assert missing == []
