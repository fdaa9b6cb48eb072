"""tldr-pages known-item search: the `> ` description line of a page is the query, that page is the answer.

Usage: python bench/known_item.py [--n 200] [--seed 0] [--mode search]
Prints MRR@10 and hits@1 over a fixed random sample of pages (the same pages for every run with the same seed).
"""
import argparse, random, tempfile, time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent/'shared'/'data'/'tldr-pages'

def description(text:str) -> str|None:
    "The first `> ` line without `> ` and the final '.'"
    for l in text.split('\n'):
        if l.startswith('> '): return l[2:].strip().rstrip('.')
    return None

def sample(n:int, seed:int) -> list[tuple[str, str]]:
    "(relative path, query) for n pages chosen with a fixed seed."
    pages = sorted(p for p in DATA.rglob('*.md') if not any(x.startswith('.') for x in p.relative_to(DATA).parts))
    pairs = [(p.relative_to(DATA).as_posix(), description(p.read_text(encoding='utf-8'))) for p in pages]
    pairs = [(p, q) for p, q in pairs if q]
    return random.Random(seed).sample(pairs, n)

def main():
    ap = argparse.ArgumentParser(); ap.add_argument('--n', type=int, default=200); ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--mode', default='search'); ap.add_argument('--home', default=None)
    a = ap.parse_args()
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.index import add_collection, update
    from qmd_nb.engine.search import search
    env = {'QMD_NB_HOME': a.home or tempfile.mkdtemp(prefix='qmdnb-ki-')}
    st = Store(env=env)
    if 'tldr' not in st.config.collections: add_collection(st, DATA, name='tldr', progress=False)
    else: update(st, progress=False)
    rr, lat, misses = [], [], []
    for path, q in sample(a.n, a.seed):
        t = time.perf_counter(); res = search(st, q, limit=10); lat.append((time.perf_counter() - t) * 1000)
        files = [r.file for r in res]
        rank = files.index(f'tldr/{path}') + 1 if f'tldr/{path}' in files else 0
        rr.append(1 / rank if rank else 0.0)
        if rank != 1: misses.append((path, q, files[:1], rank))
    lat.sort()
    print(f"known-item tldr-pages: n={a.n} seed={a.seed} mode={a.mode}")
    print(f"MRR@10 {sum(rr)/len(rr):.4f}  hits@1 {sum(r == 1 for r in rr)/len(rr):.3f}  p50 {lat[len(lat)//2]:.2f} ms")
    for m in misses[:15]: print('  miss', m)

if __name__ == '__main__': main()
