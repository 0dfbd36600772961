#!/usr/bin/env python3
"""Checks the source layout's dependency rules; run by ctest as `check_layout`.

Each code folder (protocol/, shard/, server/*/, tools/*/, bench/) is a CMake library or program
whose target_link_libraries line is its dependency rule. This script reads those lines from the
CMakeLists.txt files and fails when a file includes a header ("folder/file.h") of a folder that its
target does not link, directly or through the libraries it links. A header belongs to the library
of its folder. It also fails when the link lines form a cycle (a library linking one that links it
back, which would let both include each other), and when a code folder holds more than MAX_FILES
source files besides tests.

Usage: check_layout.py [REPO_ROOT]   (default: the parent of this file's folder)
Standard library only.
"""

import os
import re
import sys

CODE_ROOTS = ("protocol", "shard", "server", "tools", "bench")
MAX_FILES = 15
COMMAND = re.compile(r"\b(add_library|add_executable|target_link_libraries)\s*\(([^)]*)\)", re.S)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
KEYWORDS = {"STATIC", "SHARED", "OBJECT", "INTERFACE", "PUBLIC", "PRIVATE", "EXCLUDE_FROM_ALL"}


def is_test(name):
    base = os.path.basename(name)
    return base.endswith("_test.cc") or base.endswith("test_util.h")


def read_targets(root):
    """Returns (folder of each target, sources of each target, links of each target)."""
    folder_of, sources, links = {}, {}, {}
    for top in CODE_ROOTS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            if "CMakeLists.txt" not in files:
                continue
            folder = os.path.relpath(dirpath, root)
            text = open(os.path.join(dirpath, "CMakeLists.txt")).read()
            text = re.sub(r"#[^\n]*", "", text)
            for cmd, args in COMMAND.findall(text):
                words = args.split()
                if not words:
                    continue
                name, rest = words[0], words[1:]
                if cmd == "target_link_libraries":
                    items = re.split(r'[\s,:<>"$]+', " ".join(rest))
                    links.setdefault(name, set()).update(i for i in items if i)
                    continue
                folder_of[name] = folder
                sources[name] = {
                    os.path.normpath(os.path.join(folder, w))
                    for w in rest if w not in KEYWORDS and not w.startswith("$")
                }
    return folder_of, sources, links


def closure(target, folder_of, links):
    seen, todo = set(), [target]
    while todo:
        t = todo.pop()
        if t in seen or t not in folder_of:
            continue
        seen.add(t)
        todo.extend(links.get(t, ()))
    return {folder_of[t] for t in seen}


def find_cycle(folder_of, links):
    """A cycle of targets in the link lines, as a list of names, or None."""
    state = {}  # 1: on the current path, 2: done

    def visit(t, path):
        state[t] = 1
        path.append(t)
        for d in sorted(links.get(t, ())):
            if d not in folder_of:
                continue
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if d not in state:
                found = visit(d, path)
                if found:
                    return found
        path.pop()
        state[t] = 2
        return None

    for t in sorted(folder_of):
        if t not in state:
            found = visit(t, [])
            if found:
                return found
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    folder_of, sources, links = read_targets(root)
    libs_in = {}
    for t, f in folder_of.items():
        libs_in.setdefault(f, []).append(t)
    errors = []
    cycle = find_cycle(folder_of, links)
    if cycle:
        errors.append("link cycle: " + " -> ".join(f"{t} ({folder_of[t]}/)" for t in cycle))
    counts = {}
    for top in CODE_ROOTS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            folder = os.path.relpath(dirpath, root)
            for fn in sorted(files):
                if not fn.endswith((".cc", ".h")):
                    continue
                path = os.path.join(folder, fn)
                if not is_test(fn):
                    counts[folder] = counts.get(folder, 0) + 1
                owners = [t for t, s in sources.items() if path in s]
                if not owners:  # a header: it belongs to its folder's libraries
                    owners = libs_in.get(folder, [])
                allowed = {folder}
                for t in owners:
                    allowed |= closure(t, folder_of, links)
                text = open(os.path.join(root, path), errors="replace").read()
                for inc in INCLUDE.findall(text):
                    if inc.split("/")[0] not in CODE_ROOTS:
                        continue
                    if not os.path.exists(os.path.join(root, inc)):
                        errors.append(f"{path}: includes {inc}, which does not exist")
                        continue
                    dep = os.path.dirname(inc)
                    if dep not in allowed:
                        errors.append(
                            f"{path}: includes {inc}, but {folder}/CMakeLists.txt does not link "
                            f"{dep}/ (allowed: {', '.join(sorted(allowed))})")
    for folder, n in sorted(counts.items()):
        if n > MAX_FILES:
            errors.append(f"{folder}/: {n} source files besides tests, more than {MAX_FILES}")
    for e in errors:
        print("layout:", e)
    if errors:
        print(f"check_layout: {len(errors)} violation(s)")
        return 1
    print(f"check_layout: {len(counts)} folders, dependency rules and sizes hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
