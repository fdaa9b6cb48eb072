"""Embedding versioned documentation with and without reusing chunk vectors, side by side, with the real model.

    .venv/bin/python bench/bench_embed_reuse.py [--modules 6] [--edits 50]

Copies `--modules` module folders of every winserver-ps version (../shared/data/winserver-ps, four versions of most
pages) to a temporary folder and indexes it twice: one index embeds with `reuse=False` (every chunk goes to the model,
as before chunk texts were recorded), the other with the default `reuse=True`. Then `--edits` pages get a sentence in
one section, both indexes update, and both embed again. Prints seconds, chunks, chunks the model read, and the cosine
between the two indexes' vectors of each chunk (copied vectors must be the model's). Timings are printed, never
asserted: the machine is shared, and the two runs go one after the other under the same load.
"""
from __future__ import annotations
import argparse, os, shutil, sys, tempfile, time
from pathlib import Path
os.environ.setdefault('HF_HUB_OFFLINE', '1')
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from qmd_nb.engine.store import Store
from qmd_nb.engine.index import add_collection, update
from qmd_nb.engine.embed import get_embedder
from qmd_nb.engine.vectors import embed
from qmd_nb.engine.chroma import VectorStore

DOCSET = ROOT/'..'/'shared'/'data'/'winserver-ps'/'docset'

def copy_modules(dest:Path, n:int) -> int:
    "The first `n` modules (by name) of every version, copied under `dest`; the number of pages."
    versions = sorted(p for p in DOCSET.iterdir() if p.is_dir())
    mods = sorted(p.name for p in versions[-1].iterdir() if p.is_dir())[:n]
    for v in versions:
        for m in mods:
            if (v/m).is_dir(): shutil.copytree(v/m, dest/v.name/m)
    return sum(1 for _ in dest.rglob('*.md'))

def edit(folder:Path, n:int) -> int:
    "Add a sentence to the description of `n` pages (every tenth page, in name order)."
    done = 0
    for f in sorted(folder.rglob('*.md'))[::10]:
        t = f.read_text(encoding='utf-8')
        if '## DESCRIPTION\n' not in t: continue
        f.write_text(t.replace('## DESCRIPTION\n', '## DESCRIPTION\nThis page was edited for the benchmark. ', 1), encoding='utf-8')
        done += 1
        if done == n: break
    return done

def run(st, emb, reuse:bool) -> tuple:
    t = time.perf_counter(); s = embed(st, emb, reuse=reuse, progress=False)
    return time.perf_counter() - t, s

def agreement(a:Store, b:Store, fp:str) -> tuple[float, float, int]:
    "Cosine (min, mean) between the two indexes' vectors of every chunk id they share, and how many."
    ia, Ma, _ = VectorStore(a, fp).everything(); ib, Mb, _ = VectorStore(b, fp).everything()
    rb = {i: r for r, i in enumerate(ib)}
    common = [(r, rb[i]) for r, i in enumerate(ia) if i in rb]
    A, B = Ma[[r for r, _ in common]], Mb[[r for _, r in common]]
    c = (A * B).sum(1) / np.linalg.norm(A, axis=1) / np.linalg.norm(B, axis=1)
    return float(c.min()), float(c.mean()), len(common)

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--modules', type=int, default=6, help='module folders to copy from each version')
    ap.add_argument('--edits', type=int, default=50, help='pages to edit before the second embed')
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix='qmd-nb-reuse-'))
    try:
        pages = copy_modules(tmp/'docs', a.modules)
        homes = {name: Store(env={'QMD_NB_HOME': str(tmp/name)}) for name in ('every-chunk', 'reuse')}
        for st in homes.values(): add_collection(st, tmp/'docs', name='ws', progress=False)
        emb = get_embedder(homes['reuse'].config.settings); emb.embed_docs(['warm up the model'])
        print(f'{pages} pages of {a.modules} modules in 4 versions; model {emb.fingerprint.split("|")[0]}')
        rows = []
        for phase in ('first embed', f'after editing {a.edits} pages'):
            if phase != 'first embed':
                edited = edit(tmp/'docs', a.edits)
                for st in homes.values(): update(st, progress=False)
                phase = f'after editing {edited} pages'
            for name, st in homes.items():
                secs, s = run(st, emb, name == 'reuse')
                rows.append((phase, name, secs, s)); print(f'  {phase:26s} {name:12s} {secs:7.1f} s  {s.documents:5d} documents  {s.chunks:6d} chunks  '
                                                        f'model read {s.chunks - s.reused:6d}  ({s.rate:.0f} chunks/s)', flush=True)
        lo, mean, n = agreement(homes['every-chunk'], homes['reuse'], emb.fingerprint)
        print(f'\nvectors of the {n} chunks both indexes hold: cosine min {lo:.6f} mean {mean:.6f} (reuse copies what the model gave)')
        for phase in dict.fromkeys(r[0] for r in rows):
            (_, _, t0, s0), (_, _, t1, s1) = [r for r in rows if r[0] == phase]
            print(f'{phase}: {t0:.1f} s -> {t1:.1f} s ({t0 / t1:.1f}x); model read {s0.chunks - s0.reused} -> {s1.chunks - s1.reused} chunks')
    finally: shutil.rmtree(tmp, ignore_errors=True)

if __name__ == '__main__': main()
