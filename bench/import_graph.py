#!/usr/bin/env python3
"""File-level import graph of a Rust crate, and its cycles.

Usage: python3 bench/import_graph.py CRATE_DIR [--edges] [--tests]

Each file under CRATE_DIR/src is a module (src/a/b.rs and src/a/b/mod.rs are `a::b`; lib.rs
and main.rs are the root). An edge A -> B is a path in A that names module B: `crate::b::..`,
`super::..`, `self::..`, or a child module declared in A (`mod b;` then `b::..`), including
grouped `use crate::{a, b::{c, d}}`. A path ending at an item re-exported by the root
(`pub use x::Item;` in lib.rs) counts as an edge to the module the item comes from. Code in
`#[cfg(test)]` blocks is left out unless --tests is given. Edges to and from the root are
not counted (the root declares every module). Prints each cycle (a strongly connected
component of two or more files, or a file importing itself is ignored) and exits 1 if any.
"""
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel in (["lib"], ["main"]):
        return ()
    return tuple(rel)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def strip_tests(text, keep=False):
    """The text without its `#[cfg(test)]` items; with `keep`, those items stay, a `super::`
    in them (the file's own module, seen from its inline `mod tests`) read as `self::`."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        j = m.end()
        # a struct field or a struct literal's field (`name: Type,`): up to its comma
        field = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?[A-Za-z_]\w*\s*:(?!:)[^{};]*?,", text[j:])
        if field:
            if keep:
                out.append(text[m.start():j + field.end()])
            i = j + field.end()
            continue
        # the item: up to its `;` or its balanced braces
        k = j
        while k < len(text) and text[k] not in "{;":
            k += 1
        if k < len(text) and text[k] == "{":
            depth = 0
            while k < len(text):
                depth += {"{": 1, "}": -1}.get(text[k], 0)
                k += 1
                if depth == 0:
                    break
        else:
            k += 1
        if keep:
            out.append(re.sub(r"\bsuper\s*::", "self::", text[m.start():k]))
        i = k
    out.append(text[i:])
    return "".join(out)


def expand(text, pos):
    """The paths of the (possibly grouped) path starting at pos: lists of segments."""
    segs = []
    while True:
        m = re.compile(IDENT).match(text, pos)
        if m:
            segs.append(m.group(0))
            pos = m.end()
            m2 = re.compile(r"\s*::\s*").match(text, pos)
            if m2:
                pos = m2.end()
                continue
            return [segs]
        if pos < len(text) and text[pos] == "{":
            depth, start, items, k = 0, pos + 1, [], pos
            while k < len(text):
                c = text[k]
                if c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                    if depth == 0:
                        items.append(text[start:k])
                        break
                elif c == "," and depth == 1:
                    items.append(text[start:k])
                    start = k + 1
                k += 1
            paths = []
            for it in items:
                it = it.strip()
                if it:
                    for p in expand(it, 0):
                        paths.append(segs + p)
            return paths or [segs]
        return [segs]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    show_edges = "--edges" in sys.argv
    tests = "--tests" in sys.argv
    if len(args) != 1:
        print(__doc__)
        return 2
    src = os.path.join(args[0], "src")
    files = {}
    for root, _, names in os.walk(src):
        for n in names:
            if n.endswith(".rs"):
                p = os.path.join(root, n)
                files[module_of(src, p)] = p
    mods = set(files)
    texts = {}
    for m, p in files.items():
        with open(p, encoding="utf-8") as f:
            t = strip_comments(f.read())
        texts[m] = strip_tests(t, keep=tests)
    # items the root re-exports: name -> module
    reexport = {}
    for m2 in re.finditer(r"pub\s+use\s+", texts.get((), "")):
        for path in expand(texts[()], m2.end()):
            segs = [s for s in path if s not in ("crate", "self")]
            for k in range(len(segs), 0, -1):
                if tuple(segs[:k]) in mods:
                    reexport[segs[-1]] = tuple(segs[:k])
                    break

    def resolve(segs):
        for k in range(len(segs), 0, -1):
            if tuple(segs[:k]) in mods:
                return tuple(segs[:k])
        if len(segs) == 1 and segs[0] in reexport:
            return reexport[segs[0]]
        return None

    edges = {m: set() for m in mods}
    for m, t in texts.items():
        children = set(re.findall(r"\bmod\s+(" + IDENT + r")\s*;", t))
        for hit in re.finditer(r"(?<![A-Za-z0-9_:])(" + IDENT + r")\s*::\s*", t):
            head = hit.group(1)
            if head == "crate":
                base = ()
            elif head == "super":
                base = m[:-1]
            elif head == "self":
                base = m
            elif head in children:
                base = m
                for path in expand(t, hit.start(1)):
                    target = resolve(list(base) + path)
                    if target is not None and target != m:
                        edges[m].add(target)
                continue
            else:
                continue
            for path in expand(t, hit.end()):
                while path and path[0] == "super":
                    base, path = base[:-1], path[1:]
                target = resolve(list(base) + path)
                if target is not None and target != m:
                    edges[m].add(target)
    name = lambda m: "::".join(m) or "(root)"
    graph = {m: {e for e in es if e != ()} for m, es in edges.items() if m != ()}
    if show_edges:
        for m in sorted(graph):
            print(f"{name(m)} -> {', '.join(sorted(map(name, graph[m]))) or '-'}")
    # Tarjan's strongly connected components
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    crate = os.path.basename(os.path.normpath(args[0]))
    if not sccs:
        print(f"{crate}: {len(graph)} files, no import cycles")
        return 0
    for c in sccs:
        print(f"{crate}: cycle of {len(c)} files: {', '.join(name(m) for m in c)}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
