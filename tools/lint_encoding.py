"""Fail on text files opened without an explicit encoding: `open()`, `read_text()`, `write_text()`, `os.fdopen()`,
`io.TextIOWrapper()` and `subprocess` calls with `text=True`. The locale's encoding is not the file's: a native
library (the embedding model's) switches the process to ASCII for a moment, and `'ascii' codec can't decode` follows.

Usage: python tools/lint_encoding.py [folders...] (default: qmd_nb tests bench tools). Exit status 1 when something is found."""
import ast, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def _kw(call:ast.Call, name:str): return next((k.value for k in call.keywords if k.arg == name), None)

def _binary(call:ast.Call, pos:int) -> bool:
    "Whether the call's mode (keyword `mode`, or positional argument `pos`) is a constant with a 'b' in it."
    mode = _kw(call, 'mode') or (call.args[pos] if len(call.args) > pos else None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and 'b' in mode.value

def bad_call(n:ast.Call) -> str|None:
    "What is wrong with one call that reads or writes text with the locale's encoding, or None."
    if _kw(n, 'encoding') is not None: return None
    f = n.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ''
    base = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ''
    if name == 'open' and (isinstance(f, ast.Name) or base == 'io'):
        if n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, int): return None # open(0, ...): a file descriptor
        return None if _binary(n, 1) else 'open() without encoding='
    if name in ('read_text', 'write_text') and isinstance(f, ast.Attribute): return f'{name}() without encoding='
    if name == 'fdopen' and base == 'os' and not _binary(n, 1): return 'os.fdopen() in text mode without encoding='
    if name == 'TextIOWrapper': return 'TextIOWrapper() without encoding='
    if name in ('run', 'Popen', 'check_output') and base == 'subprocess':
        t = _kw(n, 'text') or _kw(n, 'universal_newlines')
        if isinstance(t, ast.Constant) and t.value is True: return f'subprocess.{name}(text=True) without encoding='
    return None

def problems(tree:ast.AST) -> list[tuple[int, str]]:
    "(line, what) for each call that reads or writes text with the locale's encoding."
    return sorted((n.lineno, w) for n in ast.walk(tree) if isinstance(n, ast.Call) and (w := bad_call(n)))

def main(folders:list[str]) -> int:
    bad = 0
    for folder in folders:
        for p in sorted((ROOT/folder).rglob('*.py')):
            if '.ipynb_checkpoints' in p.parts: continue
            for line, what in problems(ast.parse(p.read_text(encoding='utf-8'), str(p))):
                print(f"{p.relative_to(ROOT)}:{line}: {what}"); bad += 1
    if bad: print(f"{bad} text file access(es) without an explicit encoding (pass encoding='utf-8')", file=sys.stderr)
    return 1 if bad else 0

if __name__ == '__main__': sys.exit(main(sys.argv[1:] or ['qmd_nb', 'tests', 'bench', 'tools']))
