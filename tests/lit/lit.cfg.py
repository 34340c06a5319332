"""lit configuration: FileCheck tests on IR that hlobridge-opt prints after a stage."""

import os
import shutil
import sys

import lit.formats

config.name = "hlobridge"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".pbtxt", ".mlir"]
config.excludes = ["lit.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.environment["PYTHONUNBUFFERED"] = "1"

python = sys.executable
config.substitutions.append(("%hlobridge-opt", f"{python} -m hlobridge.cli.opt"))
config.substitutions.append(("%hlobridge-compile", f"{python} -m hlobridge.cli.compile"))
filecheck = shutil.which("filecheck", path=os.path.dirname(python) + os.pathsep + os.environ.get("PATH", ""))
if filecheck is None:
    lit_config.fatal("filecheck not found: pip install filecheck")
config.substitutions.append(("FileCheck", filecheck))
config.substitutions.append(("%python", python))
