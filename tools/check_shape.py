"""Check the shape of the package: module and function sizes, private names imported across modules, SQL outside the engine.

    python tools/check_shape.py            # exit status 1 on a new violation (or a known one that grew)
    python tools/check_shape.py --report   # every figure, largest first

The limits: modules of at most 400 lines, functions of at most 40; no module imports another's private (`_name`) names;
SQL (`SELECT`, `INSERT`...) only in `qmd_nb/engine/`, the one package that owns the catalog. What exceeds a limit today
is listed in KNOWN with its size: it may shrink (then lower or drop its entry), never grow, and nothing new may join it."""
from __future__ import annotations
import ast, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT/'qmd_nb'
MAX_MODULE, MAX_FUNCTION = 400, 40
SQL = re.compile(r'\b(SELECT\s.+\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TEMP\s+)?(TABLE|INDEX|VIEW))\b', re.I | re.S)
KNOWN = { # what exceeded a limit when the check came in (the reorganisation, issue 17): (kind, where) -> size; shrink it, never grow it
}

def modules() -> list[Path]:
    return sorted(p for p in PKG.rglob('*.py') if p.name != '_modidx.py')

def name(p:Path) -> str: return str(p.relative_to(ROOT))

def functions(tree) -> list[tuple[str, int]]:
    "(qualified name, lines) of every function and method."
    out = []
    def walk(node, prefix=''):
        for n in ast.iter_child_nodes(node):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((prefix + n.name, n.end_lineno - n.lineno + 1)); walk(n, prefix + n.name + '.')
            elif isinstance(n, ast.ClassDef): walk(n, prefix + n.name + '.')
            else: walk(n, prefix)
    walk(tree)
    return out

def private_imports(tree) -> list[str]:
    "`from .x import _y` (or qmd_nb.x) names: another module's private names."
    return [f"{n.module or '.'}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
            and (n.level > 0 or (n.module or '').startswith('qmd_nb')) for a in n.names
            if a.name.startswith('_') and not a.name.startswith('__')]

def sql_lines(p:Path, tree) -> list[int]:
    "Lines of string constants that hold SQL."
    return sorted({n.lineno for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and SQL.search(n.value)}
                  | {n.lineno for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)
                     and SQL.search(''.join(v.value for v in n.values if isinstance(v, ast.Constant) and isinstance(v.value, str)))})

def findings() -> dict:
    "(kind, where) -> size for everything over a limit."
    out = {}
    for p in modules():
        text = p.read_text(encoding='utf-8'); tree = ast.parse(text); m = name(p)
        n = len(text.splitlines())
        if n > MAX_MODULE: out[('module lines', m)] = n
        for f, k in functions(tree):
            if k > MAX_FUNCTION: out[('function lines', f'{m}:{f}')] = k
        for imp in private_imports(tree): out[('private import', f'{m}: {imp}')] = 1
        if not m.startswith('qmd_nb/engine/') and (lines := sql_lines(p, tree)): out[('SQL outside engine', m)] = len(lines)
    return out

def report(found:dict):
    mods = sorted(((len(p.read_text(encoding='utf-8').splitlines()), name(p)) for p in modules()), reverse=True)
    fns = sorted(((k, f'{name(p)}:{f}') for p in modules() for f, k in functions(ast.parse(p.read_text(encoding='utf-8')))), reverse=True)
    print(f"largest modules: " + ', '.join(f'{m} {n}' for n, m in mods[:5]))
    print(f"largest functions: " + ', '.join(f'{f} {n}' for n, f in fns[:5]))
    for kind in ('module lines', 'function lines', 'private import', 'SQL outside engine'):
        hits = sorted((k[1], v) for k, v in found.items() if k[0] == kind)
        print(f"{kind}: {len(hits)}" + ''.join(f"\n  {w} ({v})" for w, v in hits))

if __name__ == '__main__':
    found = findings()
    if '--report' in sys.argv: report(found); sys.exit(0)
    new = {k: v for k, v in found.items() if k not in KNOWN}
    grew = {k: (KNOWN[k], v) for k, v in found.items() if k in KNOWN and v > KNOWN[k]}
    for (kind, where), v in sorted(new.items()): print(f"NEW {kind}: {where} ({v}; limit {MAX_MODULE if kind == 'module lines' else MAX_FUNCTION if kind == 'function lines' else 0})")
    for (kind, where), (a, b) in sorted(grew.items()): print(f"GREW {kind}: {where} ({a} -> {b})")
    gone = [k for k in KNOWN if k not in found]
    if gone: print(f"{len(gone)} known entries are fixed: drop them from KNOWN in tools/check_shape.py")
    print(f"check_shape: {len(found)} over a limit, {len(found) - len(new) - len(grew)} of them known and not grown")
    if new or grew: sys.exit(1)
