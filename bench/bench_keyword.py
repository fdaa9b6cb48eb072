"""Keyword search figures for the foundation issue, measured on this machine.

Usage: python bench/bench_keyword.py [--synthetic 100000] [--skip-synthetic]

Prints: first index of tldr-pages, no-change `update`, a whole `qmd-nb search` process (time and peak memory, and
whether torch / chromadb / sentence-transformers were imported), in-process keyword search p50 on tldr-pages and on
a synthetic collection of N chunks (plain and collection-filtered), tldr known-item MRR@10, and SciFact BM25 nDCG@10.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent/'shared'/'data'
QMD = [str(Path(sys.executable).parent/'qmd-nb')]
sys.path.insert(0, str(ROOT/'bench'))

def run(args, env):
    "(wall seconds, peak RSS in MiB) of one qmd-nb process."
    t = time.perf_counter()
    p = subprocess.Popen(QMD + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status): raise SystemExit(f"qmd-nb {' '.join(args)} failed: {p.stderr.read().decode()}")
    return wall, ru.ru_maxrss / 1024

def pct(xs, p): xs = sorted(xs); return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

def process_figures(env):
    first, first_mib = run(['collection', 'add', str(DATA/'tldr-pages'), '--name', 'tldr'], env)
    upd = [run(['update'], env)[0] for _ in range(5)]
    srch = [run(['search', 'archive files with tar', '-n', '10'], env) for _ in range(10)]
    probe = ("import sys; from qmd_nb.parser import main; main(['search', 'compress files', '-n', '5']); "
             "print('HEAVY', [m for m in ('torch', 'chromadb', 'sentence_transformers') if m in sys.modules], file=sys.stderr)")
    heavy = subprocess.run([sys.executable, '-c', probe], env=env, capture_output=True, text=True, encoding='utf-8').stderr.strip().split('HEAVY ')[-1]
    return dict(first_index_s=first, first_index_peak_mib=first_mib, update_nochange_s=statistics.median(upd),
                search_process_s=statistics.median(s[0] for s in srch), search_process_p90_s=pct([s[0] for s in srch], 90),
                search_peak_mib=max(s[1] for s in srch), heavy_imports=heavy)

def inprocess_tldr(env):
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.search import keyword_hits, search
    from known_item import sample
    st = Store(env=env); qs = [q for _, q in sample(200, 0)]
    for q in qs[:20]: search(st, q)
    def timed(f):
        lat = []
        for q in qs: t = time.perf_counter(); f(q); lat.append((time.perf_counter() - t) * 1000)
        return statistics.median(lat)
    return dict(tldr_hits_p50_ms=timed(lambda q: keyword_hits(st, q, 10)), tldr_search_p50_ms=timed(lambda q: search(st, q, 10)),
                tldr_filtered_p50_ms=timed(lambda q: search(st, q, 10, collection='tldr')))

def synthetic(n, env):
    "N chunks of ~80 words drawn from a Zipf law over 50,000 words, in two collections (10% / 90%)."
    import numpy as np, hashlib
    from qmd_nb.engine.store import Store, NewDoc
    from qmd_nb.engine.catalog import put_docs
    from qmd_nb.engine.text import Analyzer
    from qmd_nb.engine.keyword import refresh
    from qmd_nb.engine.fields import HEADER, MARKS
    from qmd_nb.engine.search import search
    rng = np.random.default_rng(0); an = Analyzer()
    syl = [c + v for c in 'bdfgklmnprtvz' for v in 'aeiou']
    vocab = [''.join(rng.choice(syl, 3)) + 'x' + str(i) for i in range(50000)]
    stems = [an.terms(w)[0] for w in vocab]
    ranks = np.minimum(rng.zipf(1.2, size=n * 80) - 1, len(vocab) - 1).reshape(n, 80)
    st = Store('synthetic', env); t = time.perf_counter(); docs = []
    for i in range(n):
        body = ' '.join(vocab[j] for j in ranks[i]); coll = 'small' if i % 10 == 0 else 'big'
        docs.append(NewDoc(coll, f'c{i}.md', hashlib.sha256(body.encode()).hexdigest(), f'chunk {i}', body, f"{HEADER} {MARKS['body']} " + ' '.join(stems[j] for j in ranks[i])))
        if len(docs) == 5000: put_docs(st, docs); docs = []
    put_docs(st, docs)
    from qmd_nb.engine.config import Collection
    st.config.collections = {c: Collection(c, '/nonexistent') for c in ('small', 'big')}
    refresh(st); build = time.perf_counter() - t
    qs = [' '.join(vocab[int(j)] for j in rng.integers(10, 5000, size=3)) for _ in range(200)]
    for q in qs[:20]: search(st, q)
    def timed(**kw):
        lat = []
        for q in qs: t = time.perf_counter(); search(st, q, 10, **kw); lat.append((time.perf_counter() - t) * 1000)
        return statistics.median(lat)
    return dict(synthetic_chunks=n, synthetic_build_s=build, synthetic_p50_ms=timed(), synthetic_filtered_p50_ms=timed(collection='small'))

def main():
    ap = argparse.ArgumentParser(); ap.add_argument('--synthetic', type=int, default=100000); ap.add_argument('--skip-synthetic', action='store_true')
    a = ap.parse_args()
    home = tempfile.mkdtemp(prefix='qmdnb-bench-')
    env = {**os.environ, 'QMD_NB_HOME': home}
    out = process_figures(env)
    out.update(inprocess_tldr({'QMD_NB_HOME': home}))
    r = subprocess.run([sys.executable, str(ROOT/'bench'/'known_item.py'), '--home', home], capture_output=True, text=True, env=env, encoding='utf-8')
    out['known_item'] = r.stdout.split('\n')[1]
    r = subprocess.run(QMD + ['eval', str(DATA/'scifact'), '--mode', 'search', '--json'], capture_output=True, text=True, env=env, encoding='utf-8')
    out['scifact_search'] = json.loads(r.stdout)
    if not a.skip_synthetic: out.update(synthetic(a.synthetic, {'QMD_NB_HOME': home}))
    for k, v in out.items(): print(f"{k:28s} {v:.3f}" if isinstance(v, float) else f"{k:28s} {v}")

if __name__ == '__main__': main()
