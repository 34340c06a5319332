"""benchmarks/depthwise_padding.py as a user runs it, on two small shapes (SAME, and Keras'
explicit pad before a stride-2 VALID convolution): both variants compile with hlobridge's flags,
give the same results, and are timed; a malformed shape is refused in one line."""

import pytest

from benchmarks import depthwise_padding as bench


def test_both_variants_agree_and_are_timed(capsys):
    assert bench.main(["--shapes", "s1:1x4x4x8", "s2:1x6x6x8", "--runs", "1", "--markdown"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "| shape | pad copy us | pad fused us | fused/copy | max diff |"
    for line, shape in zip(table[2:], ["s1:1x4x4x8", "s2:1x6x6x8"]):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[0] == shape and float(cells[3]) > 0 and float(cells[4]) < 1e-6


def test_a_malformed_shape_is_refused(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--shapes", "5x6x6x8"])
    assert "expected s1:NxHxWxC" in capsys.readouterr().err
