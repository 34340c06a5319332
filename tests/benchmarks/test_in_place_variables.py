"""benchmarks/in_place_variables.py as a user runs it, on mlp_adam: both Sessions compile and
run, and the row says what is written in place and what that saves."""

from benchmarks import in_place_variables as bench
from hlobridge import flags


def test_mlp_adam_writes_its_adam_slots_in_place(capsys):
    assert bench.main(["mlp_adam", "--repeat", "1", "--warmup", "1", "--steps", "2", "--markdown"]) == 0
    table = capsys.readouterr().out.splitlines()
    cells = [c.strip() for c in table[-1].strip("|").split("|")]
    assert cells[0] == "mlp_adam" and cells[1] == "12 / 20"  # m and v of 3 weights and 3 biases
    new_mb_in_place, new_mb_untied, transient_in_place, transient_untied = map(float, cells[5:9])
    assert 0 < new_mb_in_place < new_mb_untied and 0 < transient_in_place < transient_untied
    assert not flags.from_environment().dump_to and flags.from_environment().in_place_variables
