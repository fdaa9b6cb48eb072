"""Vectors on disk under churn, with and without compaction, side by side in one run.

Usage: python bench/bench_compaction.py [--docs 1000] [--rounds 30] [--share 0.1]

Copies `--docs` tldr pages into a folder, indexes and embeds them (the real model), then `--rounds` times edits a
`--share` of them and runs `update` and `embed`, as a watcher would. It does so twice, in two indexes: once as qmd-nb
does (compacting once the deleted vectors are as many as the live ones) and once with compaction off. Prints the vectors
folder's size every 5 rounds for both, each compaction (vectors copied, seconds), and the size of a fresh index of the
final pages."""
import argparse, random, shutil, sys, tempfile, time
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent/'shared'/'data'/'tldr-pages'

def size_mb(home:Path) -> float: return round(sum(f.stat().st_size for f in (home/'cache'/'index'/'vectors').rglob('*') if f.is_file()) / 1e6, 1)

def run(base:Path, pages:list[Path], rounds:int, share:float, compacting:bool, em) -> list:
    import qmd_nb.engine.compact as C
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.index import add_collection, update
    from qmd_nb.engine.vectors import embed
    C.COMPACT_MIN = 2_000 if compacting else 10**12
    docs, home = base/'docs', base/'home'
    docs.mkdir(parents=True)
    for p in pages: shutil.copy(p, docs/p.name)
    st = Store(env={'QMD_NB_HOME': str(home)}); add_collection(st, docs, name='d', progress=False); embed(st, em, progress=False)
    rows, rnd = [('fresh', size_mb(home), '')], random.Random(0)
    for r in range(1, rounds + 1):
        for p in rnd.sample(sorted(docs.glob('*.md')), int(len(pages) * share)): p.write_text(p.read_text(encoding='utf-8') + f'\n- edit {r}\n', encoding='utf-8')
        update(st, progress=False); t = time.perf_counter(); s = embed(st, em, progress=False)
        if s.compacted: rows.append((f'round {r}', size_mb(home), f'compacted {s.compacted} vectors ({time.perf_counter() - t:.1f} s with the embed)'))
        elif r % 5 == 0: rows.append((f'round {r}', size_mb(home), ''))
    return rows

def main():
    ap = argparse.ArgumentParser(); ap.add_argument('--docs', type=int, default=1000); ap.add_argument('--rounds', type=int, default=30)
    ap.add_argument('--share', type=float, default=0.1); a = ap.parse_args()
    from qmd_nb.engine.embed import get_embedder
    from qmd_nb.engine.store import Store
    pages = sorted((DATA/'common').glob('*.md'))[:a.docs]
    tmp = Path(tempfile.mkdtemp(prefix='qmdnb-compact-'))
    em = get_embedder(Store(env={'QMD_NB_HOME': str(tmp/'model')}).config.settings)
    try:
        on, off = run(tmp/'on', pages, a.rounds, a.share, True, em), run(tmp/'off', pages, a.rounds, a.share, False, em)
        print(f'{a.docs} pages, {a.rounds} rounds editing {a.share:.0%} of them; vectors folder in MB')
        print(f"{'':10} {'compacting':>10} {'not':>6}")
        offs = dict((k, v) for k, v, _ in off)
        for k, v, note in on: print(f'{k:10} {v:10} {offs.get(k, ""):>6}  {note}')
        fresh = tmp/'fresh'; fresh.mkdir(); shutil.copytree(tmp/'on'/'docs', fresh/'pages')
        from qmd_nb.engine.index import add_collection
        from qmd_nb.engine.vectors import embed
        st = Store(env={'QMD_NB_HOME': str(fresh/'home')}); add_collection(st, fresh/'pages', name='d', progress=False); embed(st, em, progress=False)
        print(f'a fresh index of the final pages: {size_mb(fresh/"home")} MB')
    finally: shutil.rmtree(tmp, ignore_errors=True)

if __name__ == '__main__': sys.exit(main())
