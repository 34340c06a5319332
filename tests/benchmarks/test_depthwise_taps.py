"""benchmarks/depthwise_taps.py as a user runs it, on one small shape: both lowerings compile,
agree with each other, and are timed."""

from benchmarks import depthwise_taps as bench


def test_both_forms_agree_and_are_timed(capsys):
    assert bench.main(["--shapes", "1x3x3x8", "--repeat", "1", "--block-s", "0.01", "--markdown"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "| NHWC | grouped us | taps us | taps/grouped | largest difference |"
    cells = [c.strip() for c in table[2].strip("|").split("|")]
    assert cells[0] == "1x3x3x8" and float(cells[3]) > 0 and float(cells[4]) < 1e-5
