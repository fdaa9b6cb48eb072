"""Vector and hybrid search figures (issue: semantic and hybrid search), measured on this machine.

Usage: python bench/bench_hybrid.py [--skip-embed-cli] [--skip-synthetic] [--set name=value ...]

Prints SciFact nDCG@10 / Recall@100 / MRR@10 and latency for vsearch, query --no-rerank and query (warm, in-process),
a collection-filtered vsearch on a synthetic 100,000-chunk store, and the wall time of `qmd-nb embed` on SciFact
written out as markdown files. Embedding throughput against plain sentence-transformers: bench/bench_embed.py.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent/'shared'/'data'
QMD = str(Path(sys.executable).parent/'qmd-nb')

def scifact(home, sets):
    from qmd_nb.notebook.eval import evaluate
    from qmd_nb.engine.hybrid import QueryParams
    env = {'QMD_NB_HOME': home}
    p = QueryParams().updated(**sets)
    out = {}
    for name, mode, params in (('vsearch', 'vsearch', p), ('query --no-rerank', 'query', p.updated(rerank='none')), ('query', 'query', p)):
        r = evaluate(DATA/'scifact', mode, env, params)
        out[name] = r.to_json(); print(f"scifact {name:18s} {json.dumps(r.to_json())}", flush=True)
    return out

def synthetic_filtered(home, n=100_000, dim=384):
    "vsearch restricted to a collection holding 10% of a 100k-chunk store of random unit vectors."
    import numpy as np, hashlib
    from qmd_nb.engine.store import Store, NewDoc
    from qmd_nb.engine.catalog import put_docs
    from qmd_nb.engine.config import Collection
    from qmd_nb.engine.vectors import record_embedded, vector_hits
    from qmd_nb.engine.chroma import VectorStore
    from qmd_nb.engine.embed import get_embedder
    st = Store('synthetic-vectors', {'QMD_NB_HOME': home}); emb = get_embedder({}, {'QMD_NB_HOME': home})
    rng = np.random.default_rng(0); docs = n // 4 # 4 chunks a document
    if st.q("SELECT COUNT(*) FROM embedded WHERE fingerprint=?", (emb.fingerprint,))[0][0] < docs: # (re)built for this model's fingerprint
        t = time.time(); vs = VectorStore(st, emb.fingerprint)
        for k in range(0, docs, 1000):
            batch = [NewDoc('small' if i % 10 == 0 else 'big', f'd{i}.md', hashlib.sha256(f'd{i}'.encode()).hexdigest(), f'doc {i}', f'doc {i}', f'doc {i}')
                     for i in range(k, min(docs, k + 1000))]
            put_docs(st, batch)
            V = rng.standard_normal((len(batch) * 4, dim)).astype('float32'); V /= np.linalg.norm(V, axis=1, keepdims=True)
            ids = [f'{d.hash}:{j}' for d in batch for j in range(4)]
            vs.col.upsert(ids=ids, embeddings=V, metadatas=[dict(hash=i.split(':')[0], seq=int(i.split(':')[1]), start=1, end=1) for i in ids])
            record_embedded(st, emb.fingerprint, {d.hash: 4 for d in batch})
        print(f"synthetic store: {n} chunks written in {time.time() - t:.1f} s", flush=True)
    st.config.collections = {c: Collection(c, '/nonexistent') for c in ('small', 'big')}
    qs = [f'synthetic query number {i} about storage' for i in range(120)]
    for q in qs[:20]: vector_hits(st, emb, q, 10, 'small')
    lat = {}
    for name, coll in (('filtered (10% collection)', 'small'), ('filtered (90% collection)', 'big'), ('unfiltered', None)):
        ts = []
        for q in qs[20:]: t = time.perf_counter(); vector_hits(st, emb, q + name, 10, coll); ts.append((time.perf_counter() - t) * 1000)
        lat[name] = statistics.median(ts); print(f"100k-chunk vsearch {name:28s} p50 {lat[name]:.1f} ms", flush=True)
    return lat

def embed_cli(home):
    "Write SciFact as markdown files, add them as a collection, and time `qmd-nb embed`."
    folder = Path(home)/'scifact-md'; folder.mkdir(parents=True, exist_ok=True)
    for line in open(DATA/'scifact'/'corpus.jsonl', encoding='utf-8'):
        d = json.loads(line); (folder/f"{d['_id']}.md").write_text(f"# {d['title']}\n\n{d['text']}\n", encoding='utf-8')
    env = {**os.environ, 'QMD_NB_HOME': home}
    listed = subprocess.run([QMD, '--index', 'scifact', 'collection', 'list'], env=env, check=True, capture_output=True, text=True, encoding='utf-8').stdout
    if not listed.startswith('scifact\t'): # a second run on the same --home embeds everything again with -f
        subprocess.run([QMD, '--index', 'scifact', 'collection', 'add', str(folder), '--name', 'scifact'], env=env, check=True, capture_output=True)
    t = time.time(); r = subprocess.run([QMD, '--index', 'scifact', 'embed', *(['-f'] if listed.startswith('scifact\t') else [])], env=env, capture_output=True, text=True, encoding='utf-8')
    print(f"qmd-nb embed of SciFact (5,183 files): {time.time() - t:.1f} s -- {r.stdout.strip()}", flush=True)

def main():
    ap = argparse.ArgumentParser(); ap.add_argument('--home'); ap.add_argument('--skip-embed-cli', action='store_true')
    ap.add_argument('--skip-synthetic', action='store_true'); ap.add_argument('--skip-scifact', action='store_true')
    ap.add_argument('--set', action='append', default=[])
    a = ap.parse_args()
    home = a.home or tempfile.mkdtemp(prefix='qmdnb-hybrid-')
    os.environ.setdefault('QMD_NB_MODEL_CACHE', str(Path(home)/'models'))
    if not a.skip_scifact: scifact(home, dict(s.split('=', 1) for s in a.set))
    if not a.skip_synthetic: synthetic_filtered(home)
    if not a.skip_embed_cli: embed_cli(home)

if __name__ == '__main__': main()
