"""Opening a CPU device tells glibc to keep large freed blocks for reuse (runtime/host_memory.py),
unless HLOBRIDGE_FLAGS says --release-host-memory. Process-wide, so each case is a new process."""

import os
import platform
import subprocess
import sys

import pytest

CHECK = """
import hlobridge.runtime.host_memory as hm
from hlobridge.runtime.module import config
config("cpu")
print(hm.keep_freed_buffers.cache_info().currsize, hm.keep_freed_buffers(), sorted(hm.child_environment().items()))
"""


def _run(flags: str) -> str:
    env = {**os.environ, "HLOBRIDGE_FLAGS": flags}
    return subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_a_cpu_device_keeps_freed_buffers_unless_told_not_to():
    # set once, when the device was opened; a child process (the profiler's replay) is given
    # the same settings through glibc's environment variables
    assert _run("") == ("1 True [('MALLOC_MMAP_THRESHOLD_', '1073741824'), "
                        "('MALLOC_TRIM_THRESHOLD_', '2147483647')]")
    assert _run("--release-host-memory") == "1 False []"
