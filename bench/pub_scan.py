#!/usr/bin/env python3
"""The `pub` items of each library crate under crates/ that no other crate names.

Usage: python3 bench/pub_scan.py [--summary] [--crate NAME] [--all]

For every crate with a src/lib.rs it lists the items declared `pub` (not `pub(crate)` and the
like) in its src/, outside `#[cfg(test)]` code and files named tests.rs or *_tests.rs:
functions, structs, enums, unions, traits, consts, statics, type aliases, modules and
`#[macro_export]` macros at module level; methods and associated consts and types of
inherent `impl` blocks; named fields of structs. Each is looked for in the other crates —
src/, tests/, benches/ and examples/ of every other crate under crates/, bench/readbench and
fuzz/fuzz_targets — and put in one of five groups:

  named    another crate names it;
  own      only the crate's own tests/, benches/, examples/ or doc examples name it (those
           are crates of their own, so the item has to stay `pub` for them);
  exposed  a type no other crate names, but in the signature of an item others see (a
           function's parameter or result, a pub field, an enum's variants, a trait impl's
           header or associated type, a module-level macro invocation that declares an item
           others name, an item bench/pub_api.txt lists), or a module holding such an item
           (the path to it): it stays as visible as that item;
  api      nothing outside the crate names it, but bench/pub_api.txt lists it with a reason:
           deliberate public API (of a leaf, for programs outside this workspace; or a field
           of a typed event record, which holds the whole payload);
  unnamed  nothing outside the crate names it and it is not listed: a candidate for
           `pub(crate)` or less.

bench/pub_api.txt holds one item a line, `crate item  # reason` (`nettrace
Reader::with_source  # public API: read from any ByteSource`); the item is written as this
script lists it: its name, or `Type::name` for a method, associated item or field (every
item of the crate with that name counts, e.g. one method under two `#[cfg]`s). Blank lines
and lines starting with `#` are comments. A line whose crate has no such `pub` item (gone,
renamed or no longer `pub`), that gives no reason, or whose item is named, own or exposed
without it (the line is not needed) is reported as stale, so the list cannot rot.

It prints the counts per crate ("(leaf)" marks the crates docs/design.md calls leaves: their
public API is meant for programs outside this workspace too) and the stale lines of
bench/pub_api.txt, then, unless --summary, each crate's unnamed items with their file and
line; --all lists the api (with its reason), own and exposed ones too; --crate NAME keeps one
crate (and the lines of bench/pub_api.txt about it). Exit status 0, or 1 when
bench/pub_api.txt has stale lines.

How "names it" is decided — a text heuristic, not name resolution, so read the list as
candidates to look at:
- Only names are compared, not paths: an item is named when its name is a segment of a path
  that starts at its crate (`clrspy_collect::crash::core::Core`, a grouped
  `use clrspy_collect::{crash::core::Core, ..}`, renames with `as` too), or a segment after
  a name such a `use` brought in (`use clrspy_collect::crash;` then `crash::core::Core`).
  Two items of one crate with one name (an `Options` in two modules) count as named when
  either is; an item re-exported under another name is found by both.
- A file with a glob import from the crate (`use nettrace::*`) names every word it holds.
- A method, associated item or field has no path where it is used (`x.len()`, `x.name`): it
  counts as named when its type is named or exposed and its name is a word anywhere in the
  other crates — so a common word (`new`, `len`, `name`) always looks named, and every
  member of an unnamed type is unnamed; own when the word is in the crate's tests and such
  or in the code blocks of its doc comments. A struct built with struct update syntax
  (`T { a, ..T::default() }`, which needs every field visible) in another crate has all its
  fields named. A type that no `pub` item of the crate declares (a macro declared it) is
  taken as seen when another crate names it or a seen signature shows it, so the methods of
  its own `impl` blocks are judged like any other's.
- Comments are left out except doc comments (an intra-doc link to another crate's item needs
  it public); string literals are left out. Items declared by macros (anything in a
  `macro_rules!` body, derive output) and items inside function bodies are not listed;
  trait methods, enum variants and `impl Trait for Type` items are not listed (their
  visibility follows the trait or the enum).
- An item that is `pub` in a private module that is never re-exported is listed like any
  other: nothing outside can name it anyway.
"""
import bisect
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
KEYWORDS = {"crate", "self", "super", "Self"}
GROUPS = ("named", "own", "exposed", "api", "unnamed")
API_FILE = os.path.join(ROOT, "bench", "pub_api.txt")
# The leaves any Rust program could use (docs/design.md, GUIDE.md): their public API is meant
# for programs outside this workspace too, so what no crate here names is not dead for that.
LEAVES = {"nettrace", "gcdump", "readytorun", "diagnostics-client", "clrspy-values",
          "clrspy-sampler", "coredump"}


def strip(text, keep_docs):
    """The text without block comments, string and char literals, and line comments (doc
    comments kept as text when `keep_docs`). Line numbers are kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            depth, j = 0, i
            while j < n:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                    if depth == 0:
                        break
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            doc = text.startswith("///", i) or text.startswith("//!", i)
            if keep_docs and doc:
                out.append(" " + text[i + 3:j])
            i = j
        elif c == '"' or (c == "r" and re.match(r'r#*"', text[i:i + 8])
                          and (i == 0 or not re.match(r"\w", text[i - 1]))):
            m = re.match(r'r(#*)"', text[i:])
            if m:
                end = '"' + m.group(1)
                j = text.find(end, i + m.end())
                j = n if j < 0 else j + len(end)
            else:
                j = i + 1
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                j += 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == "'" and re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'", text[i:i + 12]):
            m = re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'", text[i:i + 12])
            out.append("' '")
            i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_tests(text):
    """The text with every `#[cfg(test)]` item blanked (its newlines kept)."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        k = m.end()
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
        out.append("\n" * text.count("\n", m.start(), k))
        i = k
    out.append(text[i:])
    return "".join(out)


def rust_files(d):
    if not os.path.isdir(d):
        return []
    out = []
    for root, dirs, names in os.walk(d):
        dirs[:] = [x for x in dirs if x != "target"]
        out += [os.path.join(root, f) for f in names if f.endswith(".rs")]
    return sorted(out)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


# -- declarations --------------------------------------------------------------------------

ITEM = re.compile(
    r"\bpub\s+(?:(?:const|async|unsafe|extern\s*(?:\"[^\"]*\")?)\s+)*"
    r"(fn|struct|enum|union|trait|type|const|static|mod)\s+(?:mut\s+)?(" + IDENT + r")")
FIELD = re.compile(r"\bpub\s+(" + IDENT + r")\s*:(?!:)")
MACRO = re.compile(r"#\[macro_export\][\s\S]*?macro_rules!\s*(" + IDENT + r")")
TRAIT_IMPL = re.compile(r"\bimpl\b[^{;]*\bfor\s+(?:" + IDENT + r"\s*::\s*)*(" + IDENT
                        + r")[^{;]*\{")
ASSOC_TYPE = re.compile(r"\btype\s+" + IDENT + r"\s*=[^;]*;")
INVOCATION = re.compile(r"(?<![\w:])(" + IDENT + r")!\s*[({\[]")


def balanced(text, k):
    """The end of the bracketed text that opens at `k`."""
    close = {"(": ")", "[": "]", "{": "}"}[text[k]]
    depth, j = 0, k
    while j < len(text):
        if text[j] == text[k]:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return j


def block_kinds(text):
    """A function giving, for a position of `text`, what its innermost `{` block is: 'impl'
    (inherent), 'trait_impl', 'trait', 'mod', 'type' (a struct, enum or union body), 'macro'
    (anything inside a `macro_rules!`), 'other' (a function body, a macro invocation, an
    expression) or 'top'; and the type an impl or a body is of."""
    points, stack, last = [(0, ("top", None))], [], 0
    for m in re.finditer(r"[{};]", text):
        c = m.group(0)
        if c == "{":
            head = text[last:m.start()]
            owner = None
            if (stack and stack[-1][0] == "macro") or re.search(
                    r"\bmacro_rules!\s*" + IDENT + r"\s*$", head):
                kind = "macro"
            elif re.search(r"\bimpl\b", head):
                kind = "trait_impl" if re.search(r"\bfor\b", head) else "impl"
                t = re.search(r"\bimpl\s*(?:<[^{]*?>)?\s*(?:" + IDENT + r"\s*::\s*)*(" + IDENT
                              + ")", head)
                owner = t.group(1) if t else None
            elif re.search(r"\btrait\b", head):
                kind = "trait"
            elif re.search(r"\bmod\s+" + IDENT + r"\s*$", head):
                kind = "mod"
            elif re.search(r"\b(struct|enum|union)\b", head) and not re.search(r"\bfn\b", head):
                kind = "type"
                t = re.search(r"\b(?:struct|enum|union)\s+(" + IDENT + ")", head)
                owner = t.group(1) if t else None
            else:
                kind = "other"
            stack.append((kind, owner))
            points.append((m.end(), (kind, owner)))
        elif c == "}" and stack:
            stack.pop()
            points.append((m.end(), stack[-1] if stack else ("top", None)))
        last = m.end()
    starts = [p for p, _ in points]

    def kind_at(pos):
        return points[bisect.bisect_right(starts, pos) - 1][1]

    return kind_at


def signature(text, pos, kind):
    """The text of the item at `pos` that other code sees: a function's or constant's
    declaration up to its body or `;`, a field up to its comma, an enum's or trait's whole
    body, a struct's header (its fields are items of their own)."""
    if kind in ("enum", "trait"):
        k = text.find("{", pos)
        if k < 0:
            return text[pos:pos + 200]
        depth, j = 0, k
        while j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
            if depth == 0:
                break
        return text[pos:j]
    if kind == "field":
        depth, j = 0, pos
        while j < len(text) and not (depth == 0 and text[j] in ",}\n"):
            if text[j] in "<([" and not text.startswith("->", j - 1):
                depth += 1
            elif text[j] in ">)]" and not text.startswith("->", j - 1):
                depth -= 1
            j += 1
        return text[pos:j]
    if kind == "mod":
        return ""
    m = re.compile(r"[{;]").search(text, pos)
    return text[pos:m.start() if m else len(text)]


def declarations(crate_dir):
    """(kind, name, file, line, signature, owner) of every pub item of the crate's src/ (the
    owner is the type of a method or a field); and (type or None, text) of its trait impls
    and module-level macro invocations."""
    out, extras = [], []
    for path in rust_files(os.path.join(crate_dir, "src")):
        base = os.path.basename(path)
        if base == "tests.rs" or base.endswith("_tests.rs"):
            continue
        text = strip_tests(strip(read(path), keep_docs=False))
        kind_at = block_kinds(text)

        def add(kind, name, pos, owner=None):
            line = text.count("\n", 0, pos) + 1
            out.append((kind, name, path, line, signature(text, pos, kind), owner))

        for m in ITEM.finditer(text):
            where, owner = kind_at(m.start())
            kind, name = m.group(1), m.group(2)
            if where in ("top", "mod"):
                add(kind, name, m.start())
            elif where == "impl" and kind in ("fn", "const", "type"):
                add("method" if kind == "fn" else "assoc " + kind, name, m.start(), owner)
        for m in FIELD.finditer(text):
            if m.group(1) in ("fn", "struct", "enum", "union", "trait", "type", "const",
                              "static", "mod", "use", "mut", "crate", "extern", "unsafe",
                              "async"):
                continue
            where, owner = kind_at(m.start())
            if where == "type":
                add("field", m.group(1), m.start(), owner)
        for m in MACRO.finditer(text):
            add("macro", m.group(1), m.start())
        # What others see without a `pub` item of its own: a trait impl's header and
        # associated types (`impl<T: Element> Iterator for Elements<T>`, `type Err = E`), as
        # part of its type; a macro invocation (`bulk!(GcBulkNode, .., BulkNode)`), as part of
        # the items it declares.
        for m in TRAIT_IMPL.finditer(text):
            if kind_at(m.start())[0] in ("top", "mod"):
                body = text[m.end():balanced(text, m.end() - 1)]
                extras.append((m.group(1), m.group(0) + " ".join(ASSOC_TYPE.findall(body))))
        for m in INVOCATION.finditer(text):
            if m.group(1) != "macro_rules" and kind_at(m.start())[0] in ("top", "mod"):
                extras.append((None, text[m.start():balanced(text, m.end() - 1)]))
    return out, extras


# -- uses ----------------------------------------------------------------------------------

def use_tree(text, pos):
    """The use tree starting at `pos`: (segments of every path, (local name, is glob) of every
    leaf). A leaf `a::b as c` gives the local name c; a glob gives (None, True)."""
    leaves, paths = [], []
    tree_end = text.find(";", pos)
    body = text[pos:tree_end if tree_end >= 0 else len(text)]

    def walk(s, prefix):
        s = s.strip()
        if not s:
            return
        m = re.match(r"((?:" + IDENT + r"\s*::\s*)*)(\{.*\}|\*|" + IDENT
                     + r")(?:\s+as\s+(" + IDENT + r"))?\s*$", s, re.S)
        if not m:
            return
        head = [x for x in re.split(r"\s*::\s*", m.group(1)) if x]
        path = prefix + head
        last = m.group(2)
        if last == "*":
            paths.append(path)
            leaves.append((None, True))
        elif last.startswith("{"):
            paths.append(path)
            inner, depth, start = last[1:-1], 0, 0
            parts = []
            for k, ch in enumerate(inner):
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                elif ch == "," and depth == 0:
                    parts.append(inner[start:k])
                    start = k + 1
            parts.append(inner[start:])
            for p in parts:
                walk(p, path)
        else:
            paths.append(path + [last])
            if m.group(3):
                paths.append([m.group(3)])
            local = m.group(3) or (path[-1] if last == "self" and path else last)
            leaves.append((local, False))

    walk(body, [])
    return paths, leaves


def names_used(texts, idents):
    """For each crate ident, the words `texts` (stripped code) name it by."""
    named = {c: set() for c in idents}
    alt = "|".join(map(re.escape, idents))
    path_re = re.compile(r"(?<![\w:])(" + alt + r")((?:\s*::\s*" + IDENT + r")+)")
    use_re = re.compile(r"\buse\s+(?:::)?(" + alt + r")\s*::")
    alias_re = re.compile(r"\b(?:use|extern\s+crate)\s+(" + alt + r")\s+as\s+(" + IDENT
                          + r")\s*;")
    for text in texts:
        locals_ = {}  # a name a `use` brought in -> the crate it came from
        for m in alias_re.finditer(text):
            locals_[m.group(2)] = m.group(1)
        for m in use_re.finditer(text):
            crate = m.group(1)
            paths, leaves = use_tree(text, m.end())
            for p in paths:
                named[crate].update(x for x in p if x not in KEYWORDS)
            for local, glob in leaves:
                if glob:
                    named[crate].update(re.findall(IDENT, text))
                elif local:
                    locals_[local] = crate
        for m in path_re.finditer(text):
            named[m.group(1)].update(re.findall(IDENT, m.group(2)))
        if locals_:
            local_re = re.compile(r"(?<![\w:.])(" + "|".join(map(re.escape, locals_))
                                  + r")((?:\s*::\s*" + IDENT + r")+)")
            for m in local_re.finditer(text):
                named[locals_[m.group(1)]].update(re.findall(IDENT, m.group(2)))
    return named


def fru_types(texts):
    """For each text, the types it builds with struct update syntax: the `T` of
    `T { a, ..base }` (not of a pattern's `T { a, .. }`)."""
    out = []
    for text in texts:
        types, heads = set(), []
        if not re.search(r"[,{]\s*\.\.(?![.=])\s*[^\s}]", text):
            out.append(types)
            continue
        for m in re.finditer(r"[{}]|\.\.(?![.=])", text):
            t = m.group(0)
            if t == "{":
                h = re.search(r"(" + IDENT + r")\s*$", text[max(0, m.start() - 80):m.start()])
                heads.append(h.group(1) if h else None)
            elif t == "}":
                if heads:
                    heads.pop()
            elif (heads and heads[-1] and heads[-1][0].isupper()
                  and re.search(r"[,{]\s*$", text[max(0, m.start() - 80):m.start()])
                  and not re.match(r"\s*}", text[m.end():])):
                types.add(heads[-1])
        out.append(types)
    return out


def doc_code(path, examples=False):
    """The text of a file's doc comments (where its doc examples are), stripped as code; with
    `examples`, only their code blocks (not ```text)."""
    lines = [x.strip()[3:] for x in read(path).splitlines()
             if x.strip().startswith(("///", "//!"))]
    if examples:
        code, inside = [], False
        for x in lines:
            if x.strip().startswith("```"):
                inside = not inside and x.strip()[3:].strip() in ("", "rust", "no_run",
                                                                     "should_panic")
            elif inside:
                code.append(x)
        lines = code
    return strip("\n".join(lines), keep_docs=False)


def api_list():
    """The lines of bench/pub_api.txt: {(crate, item): (line number, reason)}, and the
    problems found reading it as (line number, text)."""
    listed, bad = {}, []
    if not os.path.exists(API_FILE):
        return listed, bad
    for n, line in enumerate(read(API_FILE).splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        entry, _, reason = line.partition("#")
        words = entry.split()
        if len(words) != 2:
            bad.append((n, f"not `crate item  # reason`: {line.strip()}"))
            continue
        if not reason.strip():
            bad.append((n, f"{words[0]} {words[1]}: no reason given"))
        if tuple(words) in listed:
            bad.append((n, f"{words[0]} {words[1]}: listed twice"))
        listed[tuple(words)] = (n, reason.strip())
    return listed, bad


def main():
    args = sys.argv[1:]
    summary = "--summary" in args
    own_too = "--all" in args
    only = args[args.index("--crate") + 1] if "--crate" in args else None
    crates_dir = os.path.join(ROOT, "crates")
    crates = sorted(d for d in os.listdir(crates_dir)
                    if os.path.isdir(os.path.join(crates_dir, d)))
    libs = [c for c in crates if os.path.exists(os.path.join(crates_dir, c, "src", "lib.rs"))]
    idents = [c.replace("-", "_") for c in libs]
    text_of = {}

    def texts(files):
        for f in files:
            if f not in text_of:
                text_of[f] = strip(read(f), keep_docs=True)
        return [text_of[f] for f in files]

    # What names each crate, by the crate it names: its code, and its own tests and such.
    code_of, own_of = {}, {}
    for c in crates:
        d = os.path.join(crates_dir, c)
        code_of[c] = rust_files(os.path.join(d, "src"))
        own_of[c] = [f for x in ("tests", "benches", "examples")
                     for f in rust_files(os.path.join(d, x))]
    outside = [f for d in ("bench/readbench", "fuzz/fuzz_targets")
               for f in rust_files(os.path.join(ROOT, d))]
    used_by = {c: names_used(texts(code_of[c] + own_of[c]), idents) for c in crates}
    used_outside = names_used(texts(outside), idents)
    words_of = {c: set(re.findall(IDENT, "\n".join(texts(code_of[c] + own_of[c]))))
                for c in crates}
    words_outside = set(re.findall(IDENT, "\n".join(texts(outside))))
    fru_of = {c: set().union(*fru_types(texts(code_of[c] + own_of[c]))) for c in crates}
    fru_outside = set().union(*fru_types(texts(outside)))
    listed, stale = api_list()
    for (c, item), (n, _) in listed.items():
        if c not in libs:
            stale.append((n, f"{c} {item}: no library crate {c}"))
    rows, lists = [], []
    for c in libs:
        if only and c != only:
            continue
        ident = c.replace("-", "_")
        named, words = set(used_outside[ident]), set(words_outside)
        for other in crates:
            if other != c:
                named |= used_by[other][ident]
                words |= words_of[other]
        own_texts = texts(own_of[c]) + [doc_code(f) for f in code_of[c]]
        own = names_used(own_texts, [ident])[ident]
        own_words = set(re.findall(IDENT, "\n".join(texts(own_of[c]) + [
            doc_code(f, examples=True) for f in code_of[c]])))
        groups = {g: [] for g in GROUPS}
        decls, extras = declarations(os.path.join(crates_dir, c))
        items = [(k, n, os.path.relpath(p, ROOT), l, sig, owner)
                 for k, n, p, l, sig, owner in decls]
        members = [i for i in items if i[5] is not None]
        # Items: by the paths that name them.
        for i in items:
            if i[5] is None:
                groups["named" if i[1] in named else "own" if i[1] in own else "unnamed"].append(i)
        # Members (methods, associated items, fields): by the words of the code that could
        # reach them, when their type is seen. Struct update syntax (`T { a, ..T::default() }`)
        # needs every field of T visible: it names them all.
        reach = words | own_words
        updated = set(fru_outside)
        for other in crates:
            if other != c:
                updated |= fru_of[other]
        own_updated = set().union(*fru_types(texts(own_of[c])))

        def reached(m):
            return m[1] in reach or m[0] == "field" and m[5] in updated | own_updated

        def api(i):
            return (c, f"{i[5]}::{i[1]}" if i[5] else i[1]) in listed
        # A type in the signature of an item others see is seen too, as long as that item is.
        # So is a name others use that no `pub` item here declares: a macro declared it.
        # Items bench/pub_api.txt lists are seen too, and so is a type a macro declared (one
        # no `pub` item here declares) that others name or a seen signature shows.
        declared = {i[1] for i in items}
        made = (named | own) - declared
        seen = {i[1] for g in ("named", "own") for i in groups[g]} | made
        invoked = [t for o, t in extras if o is None and made & set(re.findall(IDENT, t))]
        owners = {m[5] for m in members} - declared
        while True:
            sigs = [i[4] for g in ("named", "own", "exposed") for i in groups[g]]
            sigs += [i[4] for i in groups["unnamed"] if api(i)]
            sigs += [m[4] for m in members if m[5] in seen and (reached(m) or api(m))]
            sigs += invoked + [t for o, t in extras if o in seen]
            words_seen = set(re.findall(IDENT, "\n".join(sigs)))
            exposed = [i for i in groups["unnamed"]
                       if i[0] in ("struct", "enum", "union", "trait", "type")
                       and i[1] in words_seen]
            shown = (owners & words_seen) - seen
            if not exposed and not shown:
                break
            groups["unnamed"] = [i for i in groups["unnamed"] if i not in exposed]
            groups["exposed"] += exposed
            seen |= {i[1] for i in exposed} | shown
        # A module holding a seen item is the path to it: seen too.
        dirs = {d for g in ("named", "own", "exposed") for i in groups[g]
                for d in os.path.splitext(i[2])[0].split(os.sep)}
        holders = [i for i in groups["unnamed"] if i[0] == "mod" and i[1] in dirs]
        groups["unnamed"] = [i for i in groups["unnamed"] if i not in holders]
        groups["exposed"] += holders
        for m in members:
            field = m[0] == "field"
            if m[5] in seen and (m[1] in words or field and m[5] in updated):
                groups["named"].append(m)
            elif m[5] in seen and (m[1] in own_words or field and m[5] in own_updated):
                groups["own"].append(m)
            else:
                groups["unnamed"].append(m)
        # Unnamed items bench/pub_api.txt explains: api.
        display = {i: f"{i[5]}::{i[1]}" if i[5] else i[1]
                   for g in groups.values() for i in g}
        groups["api"] = [i for i in groups["unnamed"] if (c, display[i]) in listed]
        groups["unnamed"] = [i for i in groups["unnamed"] if (c, display[i]) not in listed]
        for (lc, item), (n, _) in listed.items():
            if lc != c:
                continue
            found = [i for g in groups.values() for i in g if display[i] == item]
            if not found:
                stale.append((n, f"{c} {item}: no such pub item"))
            elif not any(display[i] == item for i in groups["api"]):
                g = next(g for g in GROUPS for i in groups[g] if display[i] == item)
                stale.append((n, f"{c} {item}: {g} without the line (not needed)"))
        counts = [sum(len(v) for v in groups.values())] + [len(groups[g]) for g in GROUPS]
        rows.append((c, *counts))
        lists.append((c, groups))
    w = max([len(r[0]) for r in rows] + [5]) + 7
    print(f"{'crate':<{w}}  {'pub':>5}" + "".join(f"  {g:>7}" for g in GROUPS))
    for r in rows:
        label = r[0] + (" (leaf)" if r[0] in LEAVES else "")
        print(f"{label:<{w}}  {r[1]:>5}" + "".join(f"  {n:>7}" for n in r[2:]))
    t = [sum(r[i] for r in rows) for i in range(1, len(GROUPS) + 2)]
    print(f"{'total':<{w}}  {t[0]:>5}" + "".join(f"  {n:>7}" for n in t[1:]))
    if only:
        stale = [x for x in stale if x[1].split()[0] == only]
    if stale:
        print(f"\n{os.path.relpath(API_FILE, ROOT)}: {len(stale)} stale")
        for n, text in sorted(stale):
            print(f"  line {n}: {text}")
    status = 1 if stale else 0
    if summary:
        return status
    for c, groups in lists:
        for g in ("unnamed", "api", "exposed", "own") if own_too else ("unnamed",):
            items = groups[g]
            if not items:
                continue
            print(f"\n{c}: {len(items)} {g}")
            for kind, name, path, line, _, owner in sorted(items,
                                                           key=lambda x: (x[0], x[2], x[3])):
                name = f"{owner}::{name}" if owner else name
                why = f"  # {listed[(c, name)][1]}" if g == "api" else ""
                print(f"  {kind:<12} {name:<48} {path}:{line}{why}")
    return status


if __name__ == "__main__":
    sys.exit(main())
