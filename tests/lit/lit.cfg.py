# lit configuration of the kiln pass tests: one file per pass, named after it; a .kiln file
# tests what `kiln compile` emits for a source (attributes mlirgen puts on a kernel).
import os
import lit.formats

config.name = "kiln"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".kiln"]
config.test_source_root = config.kiln_lit_src
config.test_exec_root = config.kiln_lit_obj
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in"]
config.substitutions.append(("%kiln-opt", os.path.join(config.kiln_tools_dir, "kiln-opt")))
config.substitutions.append(("%kiln", os.path.join(config.kiln_tools_dir, "kiln")))
config.substitutions.append(("%FileCheck", os.path.join(config.llvm_tools_dir, "FileCheck")))
config.substitutions.append(("%not", os.path.join(config.llvm_tools_dir, "not")))
for var in ("LSAN_OPTIONS", "ASAN_OPTIONS", "UBSAN_OPTIONS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
