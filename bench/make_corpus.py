"""Scale corpora for issue 15, built deterministically from ../shared/data (nothing is downloaded, nothing random is unseeded).

Usage:
  python bench/make_corpus.py docs OUT [--sizes 10000,30000,100000]
  python bench/make_corpus.py vectors OUT [--chunks 1000000] [--sample 6000]

`docs` writes OUT/c10k, OUT/c30k, OUT/c100k (one folder per size): the documents of winserver-ps (14,134 pages) and
tldr-pages (7,425) as variant 0, then rewritten variants 1, 2, ... until the size is reached. A variant rewrites
names and sentences with a word permutation of its own (seeded by the variant number): ~60% of the words outside the
200 most frequent are swapped with a word of about the same corpus frequency, inside words too (`Get-ADUser` becomes
`Get-ADMailbox` in one variant, `Get-ADPrinter` in another, the file name with it), so every variant keeps the
corpus's lengths, word-frequency law and structure (front matter, headings, code) while its names and sentences are
its own. Documents are taken in a seeded order that mixes both sources, so every size holds both kinds. Each folder
also gets `queries.txt` (500 one-line descriptions of its documents, for latency benches) and `manifest.json`.

`vectors` builds OUT/vectors-1m/home: a qmd-nb index (QMD_NB_HOME) whose catalog holds 125,000 short documents in two
collections ('small', 10%, and 'big') and whose embedded Chroma store holds `--chunks` chunk vectors for the bundled
model, with our own ids and metadata. The vectors are made from real ones: `--sample` real chunks of winserver-ps and
tldr-pages are embedded with the model, and each synthetic vector is a normalised mix of two of them plus a little
Gaussian noise (cosine ~0.85 to its main parent), so neighbourhoods look like a real corpus's, not like random
points. It also writes OUT/vectors-1m/queries.txt (real descriptions, not in the sample).
"""
import argparse, hashlib, json, random, re, shutil, sys, time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent/'shared'/'data'
SOURCES = (('ws', DATA/'winserver-ps'/'docset'), ('tldr', DATA/'tldr-pages'))
WORD = re.compile(r'[A-Za-z]+')
PART = re.compile(r'[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+') # camel-case parts: ADUser -> AD, User
KEEP, SHARE, BAND = 200, 0.6, 40 # the most frequent words stay; the share of the others swapped; band of frequency ranks

def sources() -> list[tuple[str, Path, str]]:
    "(source, file, relative path) of every source document, sorted."
    out = []
    for name, root in SOURCES:
        out += [(name, f, f.relative_to(root).as_posix()) for f in sorted(root.rglob('*.md')) if f.name != 'LICENSE.md']
    return out

def vocabulary(files) -> list[str]:
    "Lower-case word parts of the sources, most frequent first (ties by spelling: deterministic)."
    c = Counter()
    for _, f, rel in files:
        c.update(p.lower() for w in WORD.findall(f.read_text(encoding='utf-8') + ' ' + rel) for p in PART.findall(w))
    return [w for w, _ in sorted(c.items(), key=lambda x: (-x[1], x[0]))]

def permutation(vocab:list[str], variant:int) -> dict[str, str]:
    "Variant's word swaps: in each band of similar frequency, a seeded share of the words is permuted among itself."
    rnd, out = random.Random(variant), {}
    for k in range(KEEP, len(vocab), BAND):
        band = [w for w in vocab[k:k+BAND] if len(w) > 2]
        pick = [w for w in band if rnd.random() < SHARE]
        moved = pick[:]; rnd.shuffle(moved)
        out.update((a, b) for a, b in zip(pick, moved) if a != b)
    return out

def _case(src:str, w:str) -> str:
    "`w` in the letter case of `src`."
    return w.upper() if src.isupper() and len(src) > 1 else w.capitalize() if src[:1].isupper() else w

def rewrite(text:str, perm:dict, memo:dict|None=None # word -> rewritten word, kept across calls of one variant
           ) -> str:
    "Text with its words (and the parts of its camel-case names) swapped by `perm`."
    def part(m): p = m.group(0); q = perm.get(p.lower()); return _case(p, q) if q else p
    memo = {} if memo is None else memo
    def word(m):
        w = m.group(0)
        if (r := memo.get(w)) is None: r = memo[w] = PART.sub(part, w)
        return r
    return WORD.sub(word, text)

def order(files, n_variants:int, seed:int=15) -> list[tuple[int, int]]:
    "(variant, file index) in the order documents are taken: variant by variant, the files of both sources mixed."
    idx = list(range(len(files))); out = []
    for v in range(n_variants):
        random.Random(seed + v).shuffle(idx); out += [(v, i) for i in idx]
    return out

def describe(text:str) -> str|None:
    "A document's one-line description: tldr's `> ` line, winserver-ps's SYNOPSIS sentence."
    lines = text.split('\n')
    for i, l in enumerate(lines):
        if l.startswith('> ') and 'More information' not in l: return l[2:].strip()
        if l.strip() == '## SYNOPSIS': return next((x.strip() for x in lines[i+1:] if x.strip()), None)
    return None

def make_docs(out:Path, sizes:list[int]):
    "Write one folder per size; a document is rewritten once and written to every size that holds it."
    t0, files = time.time(), sources()
    vocab = vocabulary(files); perms = {}
    todo = order(files, -(-max(sizes) // len(files)))[:max(sizes)]
    dests = {n: out/f'c{n // 1000}k' for n in sizes}
    for d in dests.values(): shutil.rmtree(d, ignore_errors=True); d.mkdir(parents=True)
    queries, total = {n: [] for n in sizes}, {n: 0 for n in sizes}
    for k, (v, i) in enumerate(todo):
        src, f, rel = files[i]
        text = f.read_text(encoding='utf-8')
        if v:
            if v not in perms: perms[v] = permutation(vocab, v), {}
            perm, memo = perms[v]
            text, rel = rewrite(text, perm, memo), rewrite(rel, perm, memo)
        path, data = f'v{v}/{src}/{rel}', text.encode('utf-8')
        for n, d in dests.items():
            if k >= n: continue
            p = d/path; p.parent.mkdir(parents=True, exist_ok=True); p.write_bytes(data); total[n] += len(data)
            if len(queries[n]) < 500 and random.Random(k).random() < 500 / n and (q := describe(text)): queries[n].append(q)
        if k % 10000 == 0: print(f"{k:,} documents ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    for n, d in dests.items():
        (d/'queries.txt').write_text('\n'.join(queries[n]) + '\n', encoding='utf-8')
        (d/'manifest.json').write_text(json.dumps(dict(documents=n, bytes=total[n], variants=todo[n - 1][0] + 1, sources=[s for s, _ in SOURCES],
                                                       queries=len(queries[n]), made_by='bench/make_corpus.py docs'), indent=1), encoding='utf-8')
        print(f"{d}: {n:,} documents, {total[n] / 1e6:.0f} MB", file=sys.stderr)

def sample_chunks(n:int, embedder, seed:int=15) -> tuple[list[str], list[str]]:
    "(texts, descriptions): `n` real chunks of the sources as the embedder chunks them, and descriptions of other pages (the queries)."
    from qmd_nb.engine.vectors import chunk_content
    files = sources(); rnd = random.Random(seed); rnd.shuffle(files)
    texts, queries = [], []
    for _, f, rel in files:
        text = f.read_text(encoding='utf-8')
        if len(texts) < n: texts += [c.embed_text for c in chunk_content(text, 0, rel, embedder)][:4]
        elif (q := describe(text)) and len(queries) < 300: queries.append(q)
        else: break
    return texts[:n], queries

def make_vectors(out:Path, chunks:int, sample:int, per_doc:int=8, dim_noise:float=0.03, seed:int=15):
    "A qmd-nb index of `chunks` vectors in the embedded Chroma store of the bundled model (see the module docstring)."
    import numpy as np
    from qmd_nb.engine.store import Store, NewDoc
    from qmd_nb.engine.catalog import put_docs
    from qmd_nb.engine.config import Collection
    from qmd_nb.engine.embed import get_embedder
    from qmd_nb.engine.vectors import record_embedded
    from qmd_nb.engine.chroma import VectorStore
    home = out/'vectors-1m'/'home'; shutil.rmtree(home, ignore_errors=True)
    st = Store(env={'QMD_NB_HOME': str(home)}); emb = get_embedder({})
    t = time.time(); texts, queries = sample_chunks(sample, emb)
    base = emb.embed_docs(texts); print(f"embedded {len(texts)} real chunks in {time.time() - t:.0f} s", file=sys.stderr, flush=True)
    (out/'vectors-1m').mkdir(parents=True, exist_ok=True); (out/'vectors-1m'/'queries.txt').write_text('\n'.join(queries) + '\n', encoding='utf-8')
    rng, vs, docs = np.random.default_rng(seed), VectorStore(st, emb.fingerprint), chunks // per_doc
    st.config.collections = {c: Collection(c, str(home/'nowhere'/c)) for c in ('small', 'big')}; st.save_config()
    for k in range(0, docs, 625): # 5,000 chunks a write
        ids = range(k, min(docs, k + 625))
        hs = [hashlib.sha256(f'doc {i}'.encode()).hexdigest() for i in ids]
        a, b = rng.integers(0, len(base), (2, len(hs) * per_doc))
        V = base[a] + 0.5 * base[b] + dim_noise * rng.standard_normal((len(a), base.shape[1])).astype(np.float32)
        V /= np.linalg.norm(V, axis=1, keepdims=True)
        put_docs(st, [NewDoc('small' if i % 10 == 0 else 'big', f'd{i // 1000}/doc{i}.md', h, f'Document {i}',
                             '\n'.join(texts[j][:120].replace('\n', ' ') for j in a[n*per_doc:(n+1)*per_doc]), f'document {i}', 0)
                      for n, (i, h) in enumerate(zip(ids, hs))])
        vs.col.upsert(ids=[f'{h}:{s}' for h in hs for s in range(per_doc)], embeddings=V,
                      metadatas=[dict(hash=h, seq=s, start=s + 1, end=s + 1) for h in hs for s in range(per_doc)])
        record_embedded(st, emb.fingerprint, {h: per_doc for h in hs})
        if k % 12500 == 0: print(f"{k * per_doc:,} chunks ({time.time() - t:.0f} s)", file=sys.stderr, flush=True)
    from qmd_nb.engine.keyword import refresh
    refresh(st) # the keyword index, as `collection add` leaves it: without it every reading process builds one (vsearch folds near-copies by its signatures)
    print(f"{out/'vectors-1m'}: {docs * per_doc:,} chunks in {time.time() - t:.0f} s", file=sys.stderr)

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('what', choices=('docs', 'vectors')); ap.add_argument('out', type=Path, help='a folder outside the repository')
    ap.add_argument('--sizes', default='10000,30000,100000'); ap.add_argument('--chunks', type=int, default=1_000_000)
    ap.add_argument('--sample', type=int, default=6000, help='real chunks embedded for the vector set')
    a = ap.parse_args()
    if a.out.resolve().is_relative_to(ROOT): raise SystemExit(f"{a.out} is inside the repository: write the corpora elsewhere")
    if a.what == 'docs': make_docs(a.out, [int(s) for s in a.sizes.split(',')])
    else: make_vectors(a.out, a.chunks, a.sample)

if __name__ == '__main__': main()
