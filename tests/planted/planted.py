#!/usr/bin/env python3
"""planted.py: the test suite's own proof that it can fail.

Each line of bugs.txt (next to this file) is a planted bug: a mutation of one kernel source and
the ctest that must fail with it. For each selected bug the runner copies the kernel folders the
kernel tests compile from (kernels-bert/, dsl/examples/, tests/numeric/kernels/) into a scratch
directory, applies the mutation there, and runs that ctest of an existing build with
KILN_TEST_SOURCE_ROOT pointing at the scratch copy (tests/common/kernel_run.c: the kernel tests
then compile their kernels from it). The source tree is never touched.

A bug in C code (a file ending in .c, with the build target to rebuild as a seventh field) is
built, not copied: the mutated copy of the file is compiled with the build's own command for it
(compile_commands.json, with the original folder added to the include path) into the object
file that command writes, the named target is rebuilt around it (ninja relinks what depends on
the newer object, and reruns the custom commands that depend on those executables), and the
test runs. Afterwards the mutated objects are deleted and the target rebuilt, so the build is
back to the unmutated sources. Such bugs cost a relink each way, so they are never "cheap".

A bug counts as caught when its test fails. A test field of the form "TEST ~ REGEX" asks for
more: every configuration of TEST whose label matches REGEX (a Python regular expression,
searched in the label the kernel-test harness prints, tests/common/kernel_run.c's kiln_test_end:
"  ok   LABEL (T s)" or "  FAIL LABEL (T s)") must fail on its own, and at least one must match;
so "~ ^b?f16 " says that no f16 or bf16 configuration may pass, not only that the test as a
whole failed somewhere. For each caught bug the runner prints how many configurations failed.
So that a broken scratch copy (a missing file, a
kernel that no longer compiles) cannot pass for a caught bug, every test named by a selected bug
is first run on the unmutated copy and must pass there; a mutation whose text does not occur
exactly once is a stale entry, an error.

Usage: planted.py --build DIR [--cheap | --all | NAME...] [--list]
       planted.py --check-texts    (every entry's text once in its file; ctest planted.texts)
Exit status: 0 when every selected bug was caught, 1 when one was missed or a control run
failed, 2 on a bad table or bad arguments.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KERNEL_DIRS = ["kernels-bert", "dsl/examples", "tests/numeric/kernels"]


def load_table(path):
    bugs = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            fields = [x.strip() for x in line.split(" | ")]
            if len(fields) not in (6, 7) or fields[1] not in ("cheap", "full"):
                sys.exit(f"{path}:{lineno}: want 'name | cheap|full | test | file | text | replacement"
                         "[ | target]'")
            name, kind, test, rel, text, repl = fields[:6]
            target = fields[6] if len(fields) == 7 else None
            configs = None
            if " ~ " in test:
                test, pattern = (x.strip() for x in test.split(" ~ ", 1))
                try:
                    configs = re.compile(pattern)
                except re.error as e:
                    sys.exit(f"{path}:{lineno}: bad configuration pattern '{pattern}': {e}")
            if rel.endswith(".c") != (target is not None):
                sys.exit(f"{path}:{lineno}: a C file needs the build target to rebuild (a seventh "
                         "field), a kernel source none")
            if target and kind == "cheap":
                sys.exit(f"{path}:{lineno}: a bug in C code needs a rebuild, so it cannot be cheap")
            bugs.append({"name": name, "cheap": kind == "cheap", "test": test, "file": rel,
                         "text": text.replace("\\n", "\n"), "repl": repl.replace("\\n", "\n"),
                         "target": target, "configs": configs, "where": f"{path}:{lineno}"})
    return bugs


def run_test(build, test, scratch):
    """Runs one ctest against the scratch sources; returns (passed, output)."""
    env = dict(os.environ, KILN_TEST_SOURCE_ROOT=scratch)
    proc = subprocess.run(["ctest", "--test-dir", build, "-R", f"^{test}$", "--output-on-failure"],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout
    if "No tests were found" in out or "tests passed, 0 tests failed out of 0" in out:
        raise SystemExit(f"planted: ctest {test} does not exist in {build}")
    return proc.returncode == 0, out


# One configuration's verdict as the kernel-test harness prints it (kiln_test_end).
VERDICT = re.compile(r"^\s*(ok|FAIL)\s+(.*) \(\d+(?:\.\d+)? s\)$")


def config_verdicts(out):
    """[(label, failed)] of every configuration the kernel-test harness reported in out."""
    found = []
    for line in out.splitlines():
        m = VERDICT.match(line)
        if m:
            found.append((m.group(2), m.group(1) == "FAIL"))
    return found


def judge(b, passed, out):
    """Whether bug b was caught, given its test's verdict and output, and a line saying how:
    caught when the test failed and, where the entry names configurations, every one of them
    failed (and there was at least one)."""
    verdicts = config_verdicts(out)
    failed = sum(f for _, f in verdicts)
    how = f"{failed} of {len(verdicts)} configurations fail" if verdicts else "no configuration lines"
    if passed:
        return False, how
    if b["configs"] is None:
        return True, how
    named = [(label, f) for label, f in verdicts if b["configs"].search(label)]
    passing = [label for label, f in named if not f]
    if not named:
        return False, f"{how}; none matches '{b['configs'].pattern}'"
    if passing:
        return False, f"{how}; passing although they match '{b['configs'].pattern}': " + "; ".join(passing)
    return True, f"{how}, all {len(named)} matching '{b['configs'].pattern}'"


def build_target(build, target):
    """Builds one target of the build; returns (ok, output)."""
    proc = subprocess.run(["cmake", "--build", build, "--target", target], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    return proc.returncode == 0, proc.stdout


def compile_commands(build, source):
    """The build's compile commands for one source file (one per target that compiles it)."""
    path = os.path.join(build, "compile_commands.json")
    if not os.path.isfile(path):
        raise SystemExit(f"planted: {path} is missing (configure with CMAKE_EXPORT_COMPILE_COMMANDS)")
    with open(path, encoding="utf-8") as f:
        entries = [e for e in json.load(f) if os.path.realpath(e["file"]) == os.path.realpath(source)]
    if not entries:
        raise SystemExit(f"planted: {source} is compiled by no target of {build}")
    return entries


def consumers(build, obj):
    """The files ninja makes directly from obj (an archive, a shared library, an executable)."""
    rel = os.path.relpath(obj, build)
    proc = subprocess.run(["ninja", "-C", build, "-t", "query", rel], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"planted: ninja -t query {rel} failed (a Ninja build is needed):\n{proc.stdout}")
    lines = proc.stdout.splitlines()
    start = lines.index("  outputs:") + 1 if "  outputs:" in lines else len(lines)
    return [os.path.join(build, line.strip()) for line in lines[start:] if line.startswith("    ")]


def object_of(argv, directory):
    return os.path.join(directory, argv[argv.index("-o") + 1])


def run_c_bug(build, b, mutated_text):
    """Compiles the mutated copy of a C file into the build's objects, rebuilds the target, runs
    the test, then deletes the mutated objects and rebuilds the target from the real sources.
    Returns (passed, output)."""
    source = os.path.join(ROOT, b["file"])
    scratch = tempfile.mkdtemp(prefix="kiln-planted-c-")
    objects = []
    try:
        copy = os.path.join(scratch, os.path.basename(source))
        with open(copy, "w", encoding="utf-8") as f:
            f.write(mutated_text)
        for e in compile_commands(build, source):
            argv = e["arguments"] if "arguments" in e else shlex.split(e["command"])
            argv = [copy if a == e["file"] or os.path.realpath(os.path.join(e["directory"], a)) ==
                    os.path.realpath(source) else a for a in argv]
            argv.insert(1, "-I" + os.path.dirname(source))  # its own folder's "headers.h"
            obj = object_of(argv, e["directory"])
            if not os.path.exists(obj):
                continue  # a target the one under test does not need (the control build made it)
            objects.append(obj)
            stamp = os.stat(obj).st_mtime_ns
            proc = subprocess.run(argv, cwd=e["directory"], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            if proc.returncode != 0:
                return True, f"the mutated {b['file']} does not compile:\n{proc.stdout}"
            # ninja rebuilds an object whose time differs from its deps log's, so the mutated
            # one keeps the real one's time, and what is made from it is deleted instead
            os.utime(obj, ns=(stamp, stamp))
            for made in consumers(build, obj):
                if os.path.exists(made):
                    os.remove(made)
        ok, out = build_target(build, b["target"])
        if not ok:
            return True, f"the target {b['target']} does not build with the mutation:\n{out}"
        return run_test(build, b["test"], ROOT)
    finally:
        for o in objects:
            if os.path.exists(o):
                os.remove(o)
        ok, out = build_target(build, b["target"])
        shutil.rmtree(scratch, ignore_errors=True)
        if not ok:
            print(out)
            raise SystemExit(f"planted: rebuilding {b['target']} from the real sources failed")


def report(b, passed, out):
    """Prints whether bug b was caught by its test (and the output when not); returns 1 when it
    was missed, else 0."""
    caught, how = judge(b, passed, out)
    print(f"{'caught' if caught else 'MISSED'}   {b['name']:30} by {b['test']}: {how}", flush=True)
    if not caught:
        print(out)
        return 1
    for label, failed in config_verdicts(out):
        if failed:
            print(f"           fails: {label}")
    return 0


def stale_entries(bugs):
    """The entries whose text does not occur exactly once in their file, with its count."""
    stale = []
    for b in bugs:
        with open(os.path.join(ROOT, b["file"]), encoding="utf-8") as f:
            n = f.read().count(b["text"])
        if n != 1:
            stale.append((b, n))
    return stale


def main():
    # a terminated run still restores the build (run_c_bug's finally), as an interrupted one does
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("planted: terminated"))
    ap = argparse.ArgumentParser(description="Run the planted bugs of bugs.txt against a build.")
    ap.add_argument("--build", help="a configured and built build directory (needed to run bugs)")
    ap.add_argument("--cheap", action="store_true", help="only the entries marked cheap")
    ap.add_argument("--all", action="store_true", help="every entry")
    ap.add_argument("--list", action="store_true", help="print the table and exit")
    ap.add_argument("--check-texts", action="store_true",
                    help="only check that every entry's text occurs once in its file (no build)")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    bugs = load_table(os.path.join(HERE, "bugs.txt"))
    if args.list:
        for b in bugs:
            print(f"{b['name']:30} {'cheap' if b['cheap'] else 'full':5} {b['test']:28} {b['file']}"
                  + (f" (rebuilds {b['target']})" if b["target"] else "")
                  + (f" (every configuration matching '{b['configs'].pattern}')" if b["configs"] else ""))
        return 0
    if args.check_texts:
        stale = stale_entries(bugs)
        for b, n in stale:
            print(f"{b['where']}: {b['name']}: the text occurs {n} times in {b['file']} (want once): "
                  "a stale entry", file=sys.stderr)
        if not stale:
            print(f"planted: the text of each of the {len(bugs)} entries occurs once in its file")
        return 2 if stale else 0
    if not args.build:
        print("planted: --build is needed to run bugs", file=sys.stderr)
        return 2
    if args.names:
        unknown = set(args.names) - {b["name"] for b in bugs}
        if unknown:
            print(f"planted: unknown bug(s): {' '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        bugs = [b for b in bugs if b["name"] in args.names]
    elif args.cheap:
        bugs = [b for b in bugs if b["cheap"]]
    elif not args.all:
        print("planted: say --cheap, --all or which bugs", file=sys.stderr)
        return 2
    build = os.path.abspath(args.build)
    if not os.path.isfile(os.path.join(build, "CTestTestfile.cmake")):
        print(f"planted: {build} is not a build directory", file=sys.stderr)
        return 2
    for b, n in stale_entries(bugs)[:1]:
        print(f"{b['where']}: {b['name']}: the text occurs {n} times in {b['file']} (want once): "
              "a stale entry", file=sys.stderr)
        return 2

    scratch = tempfile.mkdtemp(prefix="kiln-planted-")
    try:
        for d in KERNEL_DIRS:
            shutil.copytree(os.path.join(ROOT, d), os.path.join(scratch, d))
        failures = 0
        for target in sorted({b["target"] for b in bugs if b["target"]}):
            ok, out = build_target(build, target)
            if not ok:
                print(out)
                print(f"planted: the target {target} does not build unmutated", file=sys.stderr)
                return 1
        for test in sorted({b["test"] for b in bugs}):
            ok, out = run_test(build, test, scratch)
            print(f"control  {test:28} {'passes' if ok else 'FAILS'} unmutated", flush=True)
            if not ok:
                print(out)
                failures += 1
        if failures:
            print("planted: a test fails on the unmutated sources; nothing can be judged", file=sys.stderr)
            return 1
        for b in bugs:
            if b["target"]:
                with open(os.path.join(ROOT, b["file"]), encoding="utf-8") as f:
                    text = f.read()
                ok, out = run_c_bug(build, b, text.replace(b["text"], b["repl"], 1))
                failures += report(b, ok, out)
                continue
            path = os.path.join(scratch, b["file"])
            with open(path, encoding="utf-8") as f:
                original = f.read()
            with open(path, "w", encoding="utf-8") as f:
                f.write(original.replace(b["text"], b["repl"], 1))
            try:
                ok, out = run_test(build, b["test"], scratch)
            finally:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(original)
            failures += report(b, ok, out)
        if failures:
            print(f"planted: {failures} planted bug(s) not caught by their tests", file=sys.stderr)
            return 1
        print(f"planted: all {len(bugs)} planted bug(s) caught")
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
