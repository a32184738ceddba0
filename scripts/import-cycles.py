#!/usr/bin/env python3
"""Import loops inside one stage: module A uses module B and B (directly or through others of
the same stage) uses A. A module is one source file (`ir/alu.rs` is `ir::alu`, `ir/mod.rs` is
`ir`); a use is any `crate::`/`super::`/`self::` path in non-test code (a `use` line or a path
written inline) or a bare path into a child module, resolved to the deepest module it names, through the `pub use` re-exports of
a `mod.rs`. Test code (`#[cfg(test)]` modules and files) is left out: a test may use anything.

    usage: scripts/import-cycles.py [STAGE ...]   (default: every folder of src/)
Prints each loop (strongly connected set of modules) with one path per edge as evidence.
Exit status: 0 no loop, 1 some loop.
A method call (`cx.alu(..)`) names no module, so a loop made only of those is not seen.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def module_files():
    """module path (tuple) -> file, for every file under src/."""
    mods = {}
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), ROOT)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel in (["lib"], ["main"]):
                rel = []
            mods[tuple(rel)] = os.path.join(dirpath, f)
    return mods


def strip_tests(text):
    """The text without `#[cfg(test)]` items (a `mod x { ... }` block or a `mod x;` line), and
    the names of the `#[cfg(test)] mod x;` submodules."""
    lines = text.split("\n")
    out, test_mods, i = [], set(), 0
    while i < len(lines):
        if lines[i].strip() == "#[cfg(test)]":
            j = i + 1
            while j < len(lines) and lines[j].strip().startswith("#["):
                j += 1
            m = re.match(r"\s*(pub(\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*(;|\{)", lines[j] if j < len(lines) else "")
            if m and m.group(4) == ";":
                test_mods.add(m.group(3))
                i = j + 1
                continue
            if m:
                depth, k = 0, j
                while k < len(lines):
                    depth += lines[k].count("{") - lines[k].count("}")
                    if depth <= 0 and "{" in "".join(lines[j : k + 1]):
                        break
                    k += 1
                out.extend([""] * (k + 1 - i))
                i = k + 1
                continue
        out.append(lines[i])
        i += 1
    return "\n".join(out), test_mods


def inline_mods(text):
    """The spans of the inline `mod x { ... }` blocks (test ones are already blanked)."""
    spans = []
    for m in re.finditer(r"\bmod\s+" + IDENT + r"\s*\{", text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        spans.append((m.start(), i))
    return spans


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(re.sub(r"//.*", "", l) for l in text.split("\n"))


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = tree.strip()
    m = re.match(r"^(.*?)\{(.*)\}$", tree, re.S)
    if not m:
        return [tree]
    prefix, body = m.group(1), m.group(2)
    items, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    out = []
    for it in items:
        it = it.strip()
        if it:
            out += [prefix + x for x in expand_use(it)]
    return out


def main():
    stages = sys.argv[1:] or sorted(d for d in os.listdir(ROOT) if os.path.isdir(os.path.join(ROOT, d)))
    mods = module_files()
    texts, test_only = {}, set()
    for mod, path in mods.items():
        with open(path) as f:
            t, tm = strip_tests(strip_comments(f.read()))
        texts[mod] = t
        test_only |= {mod + (x,) for x in tm}
    # re-exports of each module: name -> the path it re-exports
    reexports = {}
    for mod, t in texts.items():
        for m in re.finditer(r"pub\s+use\s+([^;]+);", t):
            for p in expand_use(m.group(1)):
                p = re.sub(r"\s+as\s+.*", "", p.strip())
                # `pub use engine::Rule;` in a `mod.rs` names its child (a path is relative to the
                # module since Rust 2018): resolve it from there, not as the module itself
                if mod + (p.split("::")[0],) in mods:
                    p = "self::" + p
                reexports.setdefault(mod, {})[p.split("::")[-1]] = p

    def absolute(mod, path, inline=0):
        segs = [s for s in path.split("::") if s]
        if segs[0] in ("crate", "$crate"):
            base, segs = [], segs[1:]
        elif segs[0] in ("super", "self"):
            # inside an inline `mod x { }`, `super` first leaves that block
            base = list(mod) + ["<inline>"] * inline
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    base = base[:-1]
                segs = segs[1:]
        else:
            return None
        if "<inline>" in base:
            return None
        return base, segs

    def resolve(mod, path, depth=0, inline=0):
        """The module a path names (its deepest module prefix, through re-exports)."""
        r = absolute(mod, path, inline)
        if r is None:
            return None
        cur, segs = r
        cur = tuple(cur)
        for s in segs:
            if cur + (s,) in mods:
                cur = cur + (s,)
                continue
            target = reexports.get(cur, {}).get(s)
            if target and depth < 8:
                res = resolve(cur, target, depth + 1)
                if res is not None:
                    return res
            break
        return cur

    edges = {}
    for mod, t in texts.items():
        if not mod or mod[0] not in stages or mod in test_only:
            continue
        found, spans = [], inline_mods(t)
        for m in re.finditer(r"\buse\s+([^;]+);", t):
            found += [(p, m.start()) for p in expand_use(m.group(1))]
        for m in re.finditer(r"(?<![A-Za-z0-9_:])(\$?crate|super|self)((::" + IDENT + ")+)(\s*\(|!)?", t):
            p = m.group(1) + m.group(2)
            if m.group(4):  # a call: the last segment is a function or macro, not a module
                p = p.rsplit("::", 1)[0]
            found.append((p, m.start()))
        # a bare path into a child module (`data_invalid::pm_data_invalid()` in a `mod.rs`)
        for m in re.finditer(r"(?<![A-Za-z0-9_:$])(" + IDENT + r")::", t):
            if mod + (m.group(1),) in mods:
                found.append(("self::" + m.group(0)[:-2], m.start()))
        for p, pos in found:
            p = re.sub(r"\s+as\s+.*", "", p.strip())
            inline = sum(1 for a, b in spans if a < pos < b)
            tgt = resolve(mod, p, inline=inline)
            if tgt is None or not tgt or tgt[0] != mod[0] or tgt == mod or tgt in test_only:
                continue
            # a module reaching its own descendant (`mod.rs` composing its files) or ancestor
            # through `super` is still an edge: both directions make a loop
            line = t.count("\n", 0, pos) + 1
            edges.setdefault(mod, {}).setdefault(tgt, f"{os.path.relpath(mods[mod], os.path.join(ROOT, '..'))}:{line} {p}")

    # Tarjan's strongly connected components
    index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
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

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    name = lambda m: "::".join(m)
    for comp in sccs:
        print("loop: " + " <-> ".join(name(m) for m in comp))
        for a in comp:
            for b, ev in sorted(edges.get(a, {}).items()):
                if b in comp:
                    print(f"  {name(a)} -> {name(b)}   ({ev})")
    nmods = sum(1 for m in texts if m and m[0] in stages and m not in test_only)
    print(f"import-cycles: {len(sccs)} loop(s) among {nmods} modules of {', '.join(stages)}")
    return 1 if sccs else 0

if __name__ == "__main__":
    sys.exit(main())
