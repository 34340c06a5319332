"""HLOBRIDGE_FLAGS: parsed once, unknown flags refused with the variable's name."""

import pytest

from hlobridge import HlobridgeError, flags


def test_flags_parse_dumps_and_limits():
    f = flags.parse("--dump-to=/tmp/d --dump-pass=simplify --max-constant-bytes=1000 "
                    "--max-tensor-elements=2**34 --max-loop-iterations=500 --release-host-memory "
                    "--no-in-place-variables")
    assert (f.dump_to, f.dump_pass, f.max_constant_bytes, f.max_tensor_elements, f.max_loop_iterations,
            f.release_host_memory, f.in_place_variables) == ("/tmp/d", "simplify", 1000, 2 ** 34, 500, True, False)
    assert flags.parse("") == flags.Flags()


@pytest.mark.parametrize("text, message", [
    ("--dump-too=x", "HLOBRIDGE_FLAGS: unknown flag(s) --dump-too=x"),
    ("--max-tensor-elements=0", "expected a positive integer, got '0'"),
    ("--max-constant-bytes=lots", "expected a positive integer, got 'lots'"),
])
def test_bad_flags_name_the_variable(text, message):
    with pytest.raises(HlobridgeError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        flags.parse(text)
