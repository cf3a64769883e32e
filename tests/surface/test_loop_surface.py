"""Loops over an array's elements (``for byte in data``) are loop regions, not a 1,024-element unroll limit."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tracer.helpers import run_both


def crc16(data):
    """benchmarks/loops.py's CRC-16, but over the array's elements (``for byte in data``): the form tested here."""
    crc = 0xFFFF
    for byte in data:
        crc ^= int(byte) << 8
        for _ in range(8):
            if crc & 0x8000:
                crc = ((crc << 1) ^ 0x1021) & 0xFFFF
            else:
                crc = (crc << 1) & 0xFFFF
    return crc


def sum_of_squares(x):
    s = 0.0
    for v in x:
        s += v * v
    return s


def region_ops(cf):
    return [n.op for n in cf.graphs()[0].nodes if n.regions]


@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_for_over_array_elements_is_a_loop_region(backend):
    data = np.random.default_rng(0).integers(0, 256, 1600).astype(np.uint8)
    cf = run_both(crc16, data, backend=backend, options={})
    assert region_ops(cf) == ["loop"]
    cf = run_both(sum_of_squares, np.linspace(0.0, 1.0, 2000), backend=backend, options={})
    assert region_ops(cf) == ["loop"]


def test_short_arrays_and_rows_still_unroll():
    assert region_ops(run_both(sum_of_squares, np.linspace(0.0, 1.0, 5))) == []
    assert region_ops(run_both(lambda x: sum(r.sum() for r in x), np.ones((40, 3)))) == []
