#!/usr/bin/env python3
"""check_layers.py SOURCE_DIR [--core A.c,B.c] [--objects X.o,Y.o] - the folder layering of
docs/internals.md, checked.

Why a test: the table "Folders and libraries, in the order data flows" says which stage may
include which; a change that reaches up a layer (the tuner's runner stage including a compiler
header, a lowering including the driver) compiles fine and is only seen by a reader, so it is
checked here instead.

1. Includes. Every tracked C file outside tests/ is read for `#include "X"` and `<kiln/X>`; X is
   resolved to the folder of the tracked header of that name (headers that are not Kiln's, such
   as MLIR's or a generated library's, are skipped). The pair (file's folder, header's folder)
   must be in LAYERS below, the table of docs/internals.md; the sources of the runner stage
   (--core: kiln_tune_core's and kiln-tune-runner's, from CMake) must not reach a compiler
   header even through a header they include.
2. Calls. The object files given (--objects: the compiler's libraries, the dialect, the cpu and
   GPU backs)
   are read with `nm`: file A calls file B when A uses a symbol B defines. No two files may call
   each other, directly or through others (a loop joins them: each lowering's dispatcher, family
   files and toolkit must depend one way).

Exit 0 when both hold, 1 with every violation listed, 2 on bad usage.
"""
import collections
import os
import re
import subprocess
import sys

# folder -> the folders whose headers its files may include (its own always). runtime/base
# (kiln_base) is below everything and includes nothing of Kiln. Most specific prefix first.
LAYERS = {
    "runtime/base": set(),
    "frontend": {"runtime/base"},
    "mlir-dialect": {"runtime/base"},
    "mlir-dialect/mlirgen": {"frontend", "mlir-dialect", "runtime/base"},
    "mlir-dialect/cpu": {"mlir-dialect", "runtime/base"},
    "mlir-dialect/gpu": {"mlir-dialect", "runtime/base"},
    "tools/driver": {"mlir-dialect/mlirgen", "mlir-dialect/cpu", "mlir-dialect/gpu",
                     "mlir-dialect", "frontend", "runtime/include", "runtime/base"},
    "autotune": {"tools/driver", "frontend", "runtime/include", "runtime/base"},
    "runtime/include": {"runtime/base"},
    "runtime/emu": {"runtime/include", "runtime/base"},
    "runtime": {"runtime/emu", "runtime/include", "runtime/base"},
    # the trainer; its `tune` command (runtime/bert/tune.c) drives the tuner
    "runtime/bert": {"autotune", "runtime/include", "runtime/base"},
    # the commands: kiln (driver, tuner; frontend for check; the PTX report of mlir-dialect/gpu
    # for stat), kiln-opt (the pass registry), kiln-bert (the trainer)
    "tools": {"tools/driver", "autotune", "frontend", "mlir-dialect", "mlir-dialect/gpu",
              "runtime/bert", "runtime/include", "runtime/base"},
    # kernels-bench compiles its kernels through the driver; gpu-bench checks against the test
    # references (tests/numeric/reference.c)
    "bench": {"tools/driver", "tests/numeric", "runtime/include", "runtime/base"},
    "examples": {"runtime/include", "runtime/base"},
}
COMPILER = {"tools/driver", "frontend", "mlir-dialect", "mlir-dialect/mlirgen",
            "mlir-dialect/cpu", "mlir-dialect/gpu"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def folder_of(path):
    best = None
    for f in LAYERS:
        if path.startswith(f + "/") and (best is None or len(f) > len(best)):
            best = f
    if best is None and path.startswith("tests/"):
        best = "/".join(path.split("/")[:2])
    return best


def tracked_sources(src):
    out = subprocess.run(["git", "-C", src, "ls-files", "*.c", "*.h"], capture_output=True,
                         text=True)
    if out.returncode == 0 and out.stdout.strip():
        return out.stdout.split()
    files = []
    for top in ["frontend", "mlir-dialect", "runtime", "autotune", "tools", "bench",
                "examples", "tests"]:
        for root, _, names in os.walk(os.path.join(src, top)):
            files += [os.path.relpath(os.path.join(root, n), src) for n in names
                      if n.endswith((".c", ".h"))]
    return sorted(files)


def includes_of(src, path):
    found = []
    with open(os.path.join(src, path), errors="replace") as f:
        for line in f:
            m = INCLUDE.match(line)
            if m:
                found.append((m.group(1), m.group(2)))
    return found


def check_includes(src, files, core):
    headers = collections.defaultdict(list)
    for f in files:
        if f.endswith(".h"):
            headers[os.path.basename(f)].append(f)

    def resolve(path, kind, name):
        if name.startswith("kiln/"):
            return "runtime/include/kiln/" + name[5:]
        if kind == '"' and os.path.dirname(name):
            return None  # a path into another project's tree (mlir-c/...)
        same = os.path.join(os.path.dirname(path), name)
        if same in files:
            return same
        cands = [h for h in headers.get(os.path.basename(name), [])
                 if not h.startswith("tests/") or path.startswith("tests/")
                 or folder_of(path) == "bench"]
        return cands[0] if len(cands) == 1 else None

    graph = {f: [h for k, n in includes_of(src, f) if (h := resolve(f, k, n))] for f in files}
    bad = []
    for f in files:
        if f.startswith("tests/"):
            continue
        mine = folder_of(f)
        if mine is None:
            continue
        for h in graph[f]:
            theirs = folder_of(h)
            if theirs != mine and theirs not in LAYERS.get(mine, set()):
                bad.append(f"{f}: includes {h} ({theirs} is not below {mine})")
    # the runner stage: no compiler header, directly or through another header
    for f in files:
        if folder_of(f) != "autotune" or os.path.basename(f) not in core:
            continue
        seen, queue = set(), list(graph[f])
        while queue:
            h = queue.pop()
            if h in seen:
                continue
            seen.add(h)
            if folder_of(h) in COMPILER:
                bad.append(f"{f}: reaches the compiler header {h} (kiln_tune_core builds "
                           "without LLVM)")
            queue += graph.get(h, [])
    return bad


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"check_layers: nm {obj} failed: {out.stderr.strip()}")
    defined, used = set(), set()
    for line in out.stdout.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "TDBRV":
            defined.add(p[2])
        elif len(p) == 2 and p[0] == "U":
            used.add(p[1])
    return defined, used


def call_loops(objs):
    owner, uses = {}, {}
    for o in objs:
        # the library's folder and the file: pipeline.c.o is in three libraries
        name = "/".join(os.path.normpath(o).split(os.sep)[-2:])
        d, u = symbols(o)
        for s in d:
            owner[s] = name
        uses[name] = u
    graph = {n: {owner[s] for s in u if s in owner and owner[s] != n} for n, u in uses.items()}
    # strongly connected components (Tarjan, iterative)
    index, low, stack, on, loops, counter = {}, {}, [], set(), [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    loops.append(sorted(comp))
    return [f"a loop of calls joins {', '.join(c)}" for c in loops]


def main():
    args = sys.argv[1:]
    lists = {"--core": [], "--objects": []}
    while len(args) >= 3 and args[1] in lists:
        lists[args[1]] += [x for x in args[2].split(",") if x]
        del args[1:3]
    if len(args) != 1 or not os.path.isdir(args[0]):
        print("usage: check_layers.py SOURCE_DIR [--core A.c,B.c] [--objects X.o,Y.o]",
              file=sys.stderr)
        return 2
    src, objs = args[0], lists["--objects"]
    core = {os.path.basename(c) for c in lists["--core"]}
    files = tracked_sources(src)
    bad = check_includes(src, files, core) + call_loops(objs)
    for b in bad:
        print("layer violation:", b)
    print(f"check_layers: {len(files)} files ({len(core)} of the runner stage), {len(objs)} "
          f"objects, {len(bad)} violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
