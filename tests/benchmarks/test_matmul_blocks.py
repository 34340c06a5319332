"""benchmarks/matmul_blocks.py as a user runs it, on small shapes: every form computes the
product (the script checks them against each other before timing), and the table has a row per
shape with a time for each form."""

from benchmarks import matmul_blocks as bench


def test_the_three_forms_are_timed_per_shape(capsys):
    # K = 600: two full blocks and a partial one; with the right operand given as it is and transposed
    assert bench.main(["--shapes", "8x600x16", "8x600x16t", "--steps", "1", "--repeat", "1"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "| M x K x N | one ms | batched ms | sliced ms | sliced/batched | sliced/one |"
    assert [row.split("|")[1].strip() for row in table[2:]] == ["8x600x16", "8x600x16t"]
    for row in table[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert all(float(c.split()[0]) > 0 for c in cells[1:])


def test_the_sliced_form_has_a_dot_per_block_added_in_order_and_the_batched_form_a_reduce():
    text = bench.module_text("sliced", 4, 600, 8, transposed=False)
    assert text.count("stablehlo.dot_general") == 3 and text.count("stablehlo.add") == 2
    assert "stablehlo.reduce" in bench.module_text("batched", 4, 600, 8, transposed=True)
