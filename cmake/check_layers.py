#!/usr/bin/env python3
"""The layering check the build runs (cmake/layers.cmake): every #include of a project file
must point into the including file's own layer or a layer it depends on (the CMake targets'
link dependencies, transitively), and project files must not include each other in a cycle.

Usage: check_layers.py SOURCE_DIR LAYERS_FILE STAMP
LAYERS_FILE: lines "folder: dep dep ... | private_dep ..." (direct deps; a folder's lines add
up). A layer may use its deps and what they export; a private dep is not exported (the
backend registry uses the CPU backend, its users may not).
A file belongs to the layer with the longest folder that contains it; files in no layer
(tests, tools) are checked for cycles only.
"""
import os
import re
import sys

src, layers_file, stamp = sys.argv[1:4]
deps, public = {}, {}
for line in open(layers_file):
    line = line.strip()
    if not line:
        continue
    folder, _, rest = line.partition(':')
    pub, _, priv = rest.partition('|')
    deps.setdefault(folder.strip(), []).extend(pub.split() + priv.split())
    public.setdefault(folder.strip(), []).extend(pub.split())

def exported(f, seen):
    if f not in seen:
        seen.add(f)
        for d in public.get(f, []):
            exported(d, seen)
    return seen

allowed = {}
for f in deps:
    allowed[f] = {f}
    for d in deps[f]:
        exported(d, allowed[f])
def layer_of(path):
    best = None
    for f in deps:
        if path.startswith(f + '/') and (best is None or len(f) > len(best)):
            best = f
    return best

# Quoted and angle-bracket includes alike (every layer has the source root on its include
# path, so <core/x.h> would compile too), each resolved as the compiler would: next to the
# including file first (quoted only), then from the source root. What resolves to neither is
# a system or third-party header.
inc_re = re.compile(r'^\s*#\s*include\s+([<"])([^">]+)[">]', re.M)
exts = ('.h', '.cpp', '.cu', '.cuh', '.comp', '.glsl', '.inc')
roots = sorted({f.split('/')[0] for f in deps} | {'tests', 'tools'})
src_abs = os.path.abspath(src)

def resolve(path, quote, name):
    here = os.path.dirname(os.path.join(src_abs, path))
    for base in ([here] if quote == '"' else []) + [src_abs]:
        cand = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(cand):
            rel = os.path.relpath(cand, src_abs)
            return None if rel.startswith('..') else rel.replace(os.sep, '/')
    return None

graph, errors = {}, []
for root in roots:
    for dirpath, _, names in os.walk(os.path.join(src, root)):
        for n in names:
            if not n.endswith(exts):
                continue
            path = os.path.relpath(os.path.join(dirpath, n), src).replace(os.sep, '/')
            text = open(os.path.join(src, path), encoding='utf-8', errors='replace').read()
            incs = [r for q, i in inc_re.findall(text) if (r := resolve(path, q, i)) is not None]
            graph[path] = incs
            mine = layer_of(path)
            if mine is None:
                continue
            for inc in incs:
                theirs = layer_of(inc)
                if theirs is None:
                    # tests/ and tools/ sit above every layer: no product code includes them.
                    errors.append(f'{path}: includes {inc}, which belongs to no layer (tests/ and tools/ sit above them all)')
                elif theirs not in allowed[mine]:
                    errors.append(f'{path}: includes {inc}: layer {mine}/ may not depend on {theirs}/ '
                                  f'(it may use: {", ".join(sorted(allowed[mine] - {mine})) or "nothing"})')

# Include cycles between project files (an edge each #include).
state = {}
def visit(p, stack):
    state[p] = 1
    stack.append(p)
    for q in graph.get(p, []):
        if state.get(q) == 1:
            errors.append('include cycle: ' + ' -> '.join(stack[stack.index(q):] + [q]))
        elif q not in state:
            visit(q, stack)
    stack.pop()
    state[p] = 2
sys.setrecursionlimit(10000)
for p in sorted(graph):
    if p not in state:
        visit(p, [])

if errors:
    for e in errors:
        print('layering: ' + e, file=sys.stderr)
    sys.exit(1)
with open(stamp, 'w') as f:
    f.write(f'{len(graph)} files, {sum(map(len, graph.values()))} includes, {len(deps)} layers: ok\n')
