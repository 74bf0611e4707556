#!/usr/bin/env python3
"""test_judge.py: the planted-bug runner's verdicts on canned test output (ctest planted.judge).

planted.cheap only ever sees bugs that are caught, so it cannot show that the runner would call
a bug missed. This test feeds planted.py's judge() the output of a kernel test as the harness
prints it (kiln_test_end's "  ok   LABEL (T s)" / "  FAIL LABEL (T s)" lines) and checks each
verdict: a failing test with every named configuration failing is caught; one named
configuration passing, no configuration matching, or a passing test is missed; and the table
reader's "TEST ~ REGEX" field. Exit status 0 when every case holds, 1 otherwise.
"""
import importlib.util
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("planted", os.path.join(HERE, "planted.py"))
planted = importlib.util.module_from_spec(spec)
spec.loader.exec_module(planted)

# Three configurations: the f32 one passes, the f16 and bf16 ones fail (what an early rounding
# to T does), plus check lines that must not count as configurations.
OUTPUT = """gemm
       [cpu w4] f32 77x64x96 tiles 32x32x16: c epi 0 vs ref  max err 1.9e-06 (tol 1.0e-05, floor 1e+00)
  ok   [cpu w4] f32 77x64x96 tiles 32x32x16, epilogues 0-3 (1.2 s)
       [cpu w4] f16 37x100x40 tiles 16x16x16: c epi 2 vs ref  max err/bound 3.512 (tol 1)
  FAIL [cpu w4] f16 37x100x40 tiles 16x16x16, epilogues 2-3 (0.8 s)
  FAIL [cpu w4] bf16 45x72x56 tiles 16x32x16, epilogues 1-2 (0.9 s)
gemm: FAILED
"""

failures = 0


def expect(what, got, want):
    global failures
    ok = got == want
    print(f"{'ok  ' if ok else 'FAIL'} {what}: got {got}, want {want}")
    failures += not ok


def bug(pattern):
    table = f"b | cheap | bert.cpu.gemm{' ~ ' + pattern if pattern else ''} | kernels-bert/gemm.kiln | a | b\n"
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(table)
    try:
        return planted.load_table(f.name)[0]
    finally:
        os.unlink(f.name)


verdicts = planted.config_verdicts(OUTPUT)
expect("configurations read", [(label.split()[2], failed) for label, failed in verdicts],
       [("f32", False), ("f16", True), ("bf16", True)])
expect("table: test name without the pattern", bug(r"\] b?f16\b")["test"], "bert.cpu.gemm")
expect("table: no pattern", bug(None)["configs"], None)
expect("failing test, no pattern: caught", planted.judge(bug(None), False, OUTPUT)[0], True)
expect("failing test, every f16/bf16 one fails: caught",
       planted.judge(bug(r"\] b?f16\b"), False, OUTPUT)[0], True)
caught, how = planted.judge(bug("."), False, OUTPUT)
expect("failing test, the f32 configuration passes under '~ .': missed", caught, False)
expect("the passing configuration is named", "f32 77x64x96" in how, True)
expect("failing test, no configuration matches: missed",
       planted.judge(bug(r"\] f64\b"), False, OUTPUT)[0], False)
expect("passing test: missed", planted.judge(bug(None), True, OUTPUT)[0], False)
expect("failing test without configuration lines, pattern given: missed",
       planted.judge(bug("."), False, "Segmentation fault\n")[0], False)
try:
    bug("(")
    expect("a bad pattern is refused", "accepted", "refused")
except SystemExit as e:
    expect("a bad pattern is refused", "bad configuration pattern" in str(e), True)

sys.exit(1 if failures else 0)
