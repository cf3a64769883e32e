"""The one per-op cost table: its classes answer both questions code generators ask of it."""

from __future__ import annotations

from jitgraph.ir.ops import OPS
from jitgraph.ir.ops.cost import COST, Cost, cost_of, math_bound, worth_keeping


def test_every_costed_op_exists() -> None:
    assert set(COST) <= set(OPS)


def test_classes_answer_the_two_questions() -> None:
    assert cost_of("add") is Cost.CHEAP and not math_bound("add") and not worth_keeping("add")
    assert math_bound("exp") and worth_keeping("exp")
    assert math_bound("floor_divide") and not worth_keeping("floor_divide")  # as measured when the sets were split
    assert worth_keeping("divide") and not math_bound("divide")
