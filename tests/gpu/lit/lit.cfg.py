# lit configuration of the GPU lowering's pass tests (tests/gpu/lit/*.mlir).
import os
import lit.formats

config.name = "kiln-gpu"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
# lit writes its scripts and timing cache under the exec root: keep that in the build tree.
config.test_exec_root = lit_config.params.get("exec_root", config.test_source_root)
config.substitutions.append(("%kiln-opt", lit_config.params["kiln_opt"]))
config.substitutions.append(("FileCheck", lit_config.params["filecheck"]))
# `not` (an LLVM tool, next to FileCheck) inverts the exit code of the error tests.
config.substitutions.append(("%not", os.path.join(os.path.dirname(lit_config.params["filecheck"]), "not")))
