#!/usr/bin/env python3
"""planted.py: the test suite's own proof that it can fail.

Each line of bugs.txt (next to this file) is a planted bug: a mutation of one kernel source and
the ctest that must fail with it. For each selected bug the runner copies the kernel folders the
kernel tests compile from (kernels-bert/, dsl/examples/, tests/numeric/kernels/) into a scratch
directory, applies the mutation there, and runs that ctest of an existing build with
KILN_TEST_SOURCE_ROOT pointing at the scratch copy (tests/common/kernel_run.c: the kernel tests
then compile their kernels from it). The source tree is never touched.

A bug counts as caught when its test fails. So that a broken scratch copy (a missing file, a
kernel that no longer compiles) cannot pass for a caught bug, every test named by a selected bug
is first run on the unmutated copy and must pass there; a mutation whose text does not occur
exactly once is a stale entry, an error.

Usage: planted.py --build DIR [--cheap | --all | NAME...] [--list]
Exit status: 0 when every selected bug was caught, 1 when one was missed or a control run
failed, 2 on a bad table or bad arguments.
"""
import argparse
import os
import shutil
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
            if len(fields) != 6 or fields[1] not in ("cheap", "full"):
                sys.exit(f"{path}:{lineno}: want 'name | cheap|full | test | file | text | replacement'")
            name, kind, test, rel, text, repl = fields
            bugs.append({"name": name, "cheap": kind == "cheap", "test": test, "file": rel,
                         "text": text.replace("\\n", "\n"), "repl": repl.replace("\\n", "\n"),
                         "where": f"{path}:{lineno}"})
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


def main():
    ap = argparse.ArgumentParser(description="Run the planted bugs of bugs.txt against a build.")
    ap.add_argument("--build", required=True, help="a configured and built build directory")
    ap.add_argument("--cheap", action="store_true", help="only the entries marked cheap")
    ap.add_argument("--all", action="store_true", help="every entry")
    ap.add_argument("--list", action="store_true", help="print the table and exit")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    bugs = load_table(os.path.join(HERE, "bugs.txt"))
    if args.list:
        for b in bugs:
            print(f"{b['name']:30} {'cheap' if b['cheap'] else 'full':5} {b['test']:28} {b['file']}")
        return 0
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
    for b in bugs:
        with open(os.path.join(ROOT, b["file"]), encoding="utf-8") as f:
            n = f.read().count(b["text"])
        if n != 1:
            print(f"{b['where']}: {b['name']}: the text occurs {n} times in {b['file']} (want once): "
                  "a stale entry", file=sys.stderr)
            return 2

    scratch = tempfile.mkdtemp(prefix="kiln-planted-")
    try:
        for d in KERNEL_DIRS:
            shutil.copytree(os.path.join(ROOT, d), os.path.join(scratch, d))
        failures = 0
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
            print(f"{'MISSED' if ok else 'caught'}   {b['name']:30} by {b['test']}", flush=True)
            if ok:
                failures += 1
        if failures:
            print(f"planted: {failures} planted bug(s) not caught by their tests", file=sys.stderr)
            return 1
        print(f"planted: all {len(bugs)} planted bug(s) caught")
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
