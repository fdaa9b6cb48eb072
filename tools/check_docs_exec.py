"""Check that every notebook runs under `nbdev-docs` as it does under `nbdev-test`, without running it.

`nbdev-docs` (Quarto's render step, `exec_show_docs`) executes only some cells of a notebook: exported cells,
`#| exec_doc` cells, `show_doc` calls, and every cell holding an `import`. A cell that imports and also uses a name
made by a cell the docs do not run (a test cell with `import re` and `mem.execute(...)`, `mem` made by an example
cell) fails there with a NameError, though `nbdev-test` passes. This walks the cells nbdev-docs would run, in order,
and reports each name one of them reads before any of them made it. Exit status 1 when there is one.
With --run it then runs those cells for real, as nbdev-docs would (nbdev's `proc_nbs` into `_proc/`, without the
Quarto install and the sidebar rewrite that `nbdev-proc-nbs` does first): that also catches what reading cannot, such as
`show_doc` resolving an annotation whose name is imported for type checkers only.
Usage: python tools/check_docs_exec.py [--run] [NOTEBOOK...]   (default: every notebook in nbs/)"""
import ast, builtins, sys, warnings
from pathlib import Path

PRESET = set(dir(builtins)) | {'show_doc', 'display', 'get_ipython', '__file__'} # what the docs' shell has before any cell

def _reads_and_writes(tree) -> tuple[set, set]:
    "Names a cell reads at its own level (not inside functions or lambdas, which run later if at all), and names it binds."
    reads, writes = set(), set()
    def visit(n, top=True):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            writes.add(n.name)
            for d in n.decorator_list: visit(d, top)
            return
        if isinstance(n, ast.Lambda): return
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            writes.update((a.asname or a.name).split('.')[0] for a in n.names); return
        if isinstance(n, ast.Name): (reads if isinstance(n.ctx, ast.Load) else writes).add(n.id)
        if isinstance(n, ast.arg): writes.add(n.arg)
        for c in ast.iter_child_nodes(n): visit(c, top)
    for stmt in tree: visit(stmt)
    return reads, writes

def problems(nb:Path) -> list[str]:
    "Cells of `nb` that nbdev-docs runs and that read a name no earlier such cell made."
    from nbdev.process import NBProcessor
    from nbdev.processors import _do_eval
    with warnings.catch_warnings():
        warnings.simplefilter('ignore') # nbdev's note about cells that mix imports and code: what we look at more closely
        cells = [c for c in NBProcessor(nb, rm_directives=False, process=True).nb.cells if c.cell_type == 'code' and _do_eval(c)]
    known, out = set(PRESET), []
    for c in cells:
        reads, writes = _reads_and_writes(c.parsed_() or [])
        missing = sorted(reads - known - writes)
        if missing: out.append(f"{nb.name}: cell {c.idx_} runs under nbdev-docs (it holds an import) but reads {', '.join(missing)}, "
                               "made by cells nbdev-docs skips: move its imports to a cell of their own")
        known |= writes
    return out

def run_docs_cells(nbs:Path):
    "Run the cells nbdev-docs runs in every notebook under `nbs` (raises on the first that fails, naming notebook and cell)."
    import os
    from nbdev.serve import proc_nbs
    os.environ['PYTHONWARNINGS'] = 'ignore::UserWarning' # nbdev's note on cells mixing imports and code, once per such cell, in each worker
    proc_nbs(str(nbs), force=True)

def run_checked(nbs:Path) -> int:
    """`run_docs_cells` in a child process whose stderr is shown and read: a traceback there (a thread an example cell
    started, running on after the cells that stop it were skipped) fails the check too, though nbdev-docs goes on."""
    import subprocess
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import check_docs_exec as c; c.run_docs_cells(c.Path({str(nbs)!r}))"
    r = subprocess.run([sys.executable, '-c', code], stderr=subprocess.PIPE, text=True, encoding='utf-8', errors='replace')
    sys.stderr.write(r.stderr)
    if r.returncode: return r.returncode
    if 'Traceback (most recent call last)' in r.stderr:
        print("FAIL: a traceback was printed while nbdev-docs' cells ran (above): a cell it runs started something that failed", file=sys.stderr)
        return 1
    return 0

if __name__ == '__main__':
    nbs = Path(__file__).resolve().parents[1]/'nbs'
    args = [a for a in sys.argv[1:] if a != '--run']
    files = [Path(a) for a in args] or sorted({*nbs.rglob('[0-9]*.ipynb'), *nbs.glob('*.ipynb'), *nbs.glob('tutorials/*.ipynb')})
    found = [p for f in files for p in problems(f)]
    print('\n'.join(found) or f"{len(files)} notebooks: nbdev-docs runs the same cells cleanly (no import cell reads what it skips)")
    if found: sys.exit(1)
    if '--run' in sys.argv:
        if rc := run_checked(nbs): sys.exit(rc)
        print(f"nbdev-docs' cells ran in every notebook (into {nbs.parent/'_proc'})")
