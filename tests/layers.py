#!/usr/bin/env python3
"""The module layering, checked from the #include lines (docs/architecture.md).

Each module folder may include only the modules DEPS allows it; DEPS itself
must be a DAG. So no lower module includes a higher one, and no two modules
include each other, however far apart. A new folder, or a new arrow, is a
line here, reviewed with the change that needs it.

Run: layers.py SOURCE_ROOT. Exit 0, or 1 with every offending include.
"""
import os
import re
import sys

# module -> the modules it may include (besides itself)
DEPS = {
    'util': {'platform'},               # EXCEPTION, see below
    'path': {'util'},
    'config': {'path', 'util'},
    'profile': {'util'},
    'image': {'profile', 'util'},       # an OCI image as the root (image/image.h)
    'caps': {'util'},
    'cgroup': {'util'},
    'landlock': {'util'},
    'net': {'util'},
    'ns': {'util'},
    'seccomp': {'util'},
    'mount': {'path', 'profile', 'landlock', 'util'},
    'platform': {'profile', 'util'},    # platform/platform.h, the interface
    'result': {'config', 'util'},
    'frame': {'config', 'image', 'platform', 'util'},   # the command frame: below every command
    'report': {'config', 'frame', 'util'},
    'doctor': {'cgroup', 'config', 'frame', 'landlock', 'profile', 'util'},
    'supervisor': {'caps', 'cgroup', 'config', 'doctor', 'image', 'landlock', 'mount', 'net', 'ns', 'path', 'platform',
                   'profile', 'result', 'seccomp', 'util'},
    'platform-impl': {'platform', 'config', 'doctor', 'profile', 'supervisor', 'util'},   # platform/linux, posix
    'program': {'config', 'path', 'supervisor', 'util'},    # the python program's request (program/program.h)
    'judge': {'config', 'frame', 'profile', 'program', 'report', 'result', 'supervisor', 'util', 'warm'},
    'testcmd': {'config', 'frame', 'platform', 'program', 'report', 'result', 'supervisor', 'util'},
    'warm': {'cgroup', 'config', 'landlock', 'profile', 'program', 'result', 'supervisor', 'util'},
    'batch': {'config', 'frame', 'judge', 'mount', 'path', 'platform', 'program', 'result', 'supervisor', 'util', 'warm'},   # mount, path: a job's files (mnt_file; the name check)
    'serve': {'util', 'config'},   # a front door: jobs run in `nsbox batch`, a process of their own; config: the engine's own limit parser for the ceilings
}

# Known arrows that run up, each with its reason; the check fails if one
# disappears (so the list cannot go stale) and if any other appears.
# util/resultfile.c opens the result file through plat_open_no_symlinks:
# the no-symlink open is the platform's, the result-file rule is util's.
EXCEPTIONS = {('util', 'platform')}

# Folders above every module: they may include anything.
TOP = {'tests', 'fuzz', 'dist', 'fixtures', 'bench', 'build'}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/([^"]+)"', re.M)


def module_of(rel):
    """The module a path (relative to the root) belongs to, or None."""
    parts = rel.split(os.sep)
    if len(parts) < 2:
        return None
    if parts[0] == 'platform':
        return 'platform' if parts[1] == 'platform.h' else 'platform-impl'
    return parts[0]


def acyclic(deps):
    state = {}

    def visit(m, stack):
        if state.get(m) == 1:
            raise SystemExit('layers.py: DEPS has a cycle: ' + ' -> '.join(stack + [m]))
        if state.get(m) == 2:
            return
        state[m] = 1
        for d in sorted(deps.get(m, ())):
            if (m, d) not in EXCEPTIONS:
                visit(d, stack + [m])
        state[m] = 2

    for m in sorted(deps):
        visit(m, [])


def main(root):
    acyclic(DEPS)
    bad, seen_exceptions, n = [], set(), 0
    for top in sorted(os.listdir(root)):
        if top in TOP or top.startswith('.') or not os.path.isdir(os.path.join(root, top)):
            continue
        if os.path.exists(os.path.join(root, top, 'meson-info')):   # a build directory (build-asan, ...)
            continue
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(('.c', '.h')):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                src = module_of(rel)
                with open(path, encoding='utf-8') as fh:
                    text = fh.read()
                for m in INCLUDE.finditer(text):
                    n += 1
                    dst = module_of(os.path.join(m.group(1), m.group(2)))
                    if dst == src or dst is None:
                        continue
                    if src not in DEPS:
                        bad.append(f'{rel}: module {src!r} is not declared in tests/layers.py')
                        break
                    if dst not in DEPS[src]:
                        bad.append(f'{rel}: includes {m.group(1)}/{m.group(2)} ({src} may include only '
                                   f'{", ".join(sorted(DEPS[src]))})')
                    elif (src, dst) in EXCEPTIONS:
                        seen_exceptions.add((src, dst))
    # A file named test_*.c reads as a test: outside tests/ none may be one
    # (#32: testcmd's driver and plan were test_run.c and test_plan.c).
    for top in sorted(os.listdir(root)):
        if top in TOP or top.startswith('.') or not os.path.isdir(os.path.join(root, top)):
            continue
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            if os.path.exists(os.path.join(root, top, 'meson-info')):
                break
            for f in sorted(files):
                if f.startswith('test_') and f.endswith(('.c', '.h')):
                    bad.append(f'{os.path.relpath(os.path.join(dirpath, f), root)}: named as a test; '
                               'tests live in tests/, a module\'s files are named MODULE_*.c')
    for ex in sorted(EXCEPTIONS - seen_exceptions):
        bad.append(f'exception {ex[0]} -> {ex[1]} is no longer needed: remove it from tests/layers.py')
    for line in bad:
        print(line)
    print(f'{n} includes checked, {len(bad)} problems')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
