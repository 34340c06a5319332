"""The runtime module wrapper (runtime/module.py)."""

import pytest

from hlobridge.errors import HlobridgeError
from hlobridge.runtime.module import invoke_or_raise


def test_an_iree_failure_at_invocation_is_an_error_naming_the_function():
    # found by tools/fuzz_graphs.py: a cluster whose tensors were 2^40 elements failed IREE's
    # allocator, and the RuntimeError came out of Session.run as a traceback
    def refuse(*args):
        raise RuntimeError("Error invoking function: allocator_libc.c:57: RESOURCE_EXHAUSTED; "
                           "libc allocator failed the request\n[ 0] bytecode cluster_0@1:1984 -")
    with pytest.raises(HlobridgeError, match=r"^cluster 'c' \(3 nodes\) failed on the device: Error invoking "
                                             r"function: allocator_libc.c:57: RESOURCE_EXHAUSTED; libc "
                                             r"allocator failed the request$"):
        invoke_or_raise(refuse, [1, 2], "cluster 'c' (3 nodes)")
    assert invoke_or_raise(lambda a, b: a + b, [1, 2], "f()") == 3
