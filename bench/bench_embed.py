"""Embedding throughput and query latency, plain sentence-transformers against qmd_nb.engine.embed, side by side.

    .venv/bin/python bench/bench_embed.py [--n 400] [--queries 200] [--rounds 2] [--extra]

Chunks of ~250 word pieces are cut from SciFact (../shared/data/scifact, read in place). The reference is
`SentenceTransformer(model_dir()).encode(texts)` with default settings (fp32, batch 32, all threads); every fast
path is compared with its vectors by cosine. Timings are printed, never asserted: this machine is shared, so each
throughput is the best of `--rounds` interleaved runs.
"""
from __future__ import annotations
import argparse, json, os, sys, tempfile, time
from pathlib import Path
os.environ.setdefault('HF_HUB_OFFLINE', '1')
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from qmd_nb.engine.chunk import model_dir
from qmd_nb.engine.embed import OpenVINOEmbedder, TorchEmbedder

SCIFACT = ROOT/'..'/'shared'/'data'/'scifact'

def make_chunks(n:int, size:int=250, least:int=200) -> list[str]:
    "`n` texts of `least`..`size` word pieces: SciFact title + abstract, long ones cut, short ones merged."
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(model_dir(), 'tokenizer.json')); tok.no_truncation(); tok.no_padding()
    out, cur = [], ''
    with open(SCIFACT/'corpus.jsonl', encoding='utf-8') as f:
        for line in f:
            d = json.loads(line); cur = f"{cur} {d['title']} {d['text']}".strip()
            enc = tok.encode(cur, add_special_tokens=False)
            while len(enc.ids) >= least:
                end = enc.offsets[min(size, len(enc.ids)) - 1][1]
                out.append(cur[:end]); cur = cur[end:].strip()
                if len(out) == n: return out
                enc = tok.encode(cur, add_special_tokens=False)
    return out

def queries(n:int) -> list[str]:
    with open(SCIFACT/'queries.jsonl', encoding='utf-8') as f: return [json.loads(l)['text'] for l in f][:n]

def cosines(a, b):
    a = a / np.linalg.norm(a, axis=1, keepdims=True); b = b / np.linalg.norm(b, axis=1, keepdims=True)
    c = (a * b).sum(1); return c.min(), c.mean()

def latencies(fs:dict, qs:list[str], block:int=25) -> dict:
    "p50 and p95 milliseconds of each function over the queries, run in alternating blocks so noise hits all alike."
    for f in fs.values():
        for q in qs[:10]: f(q + ' warm')
    ts = {k: [] for k in fs}
    for i in range(0, len(qs), block):
        for k, f in fs.items():
            for q in qs[i:i + block]:
                t = time.perf_counter(); f(q); ts[k].append(time.perf_counter() - t)
    return {k: (np.percentile(v, 50) * 1000, np.percentile(v, 95) * 1000) for k, v in ts.items()}

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--n', type=int, default=400, help='chunks to embed')
    ap.add_argument('--queries', type=int, default=200, help='queries for the latency test')
    ap.add_argument('--rounds', type=int, default=2, help='interleaved runs per path; the best counts')
    ap.add_argument('--extra', action='store_true', help='also time the variants that lost')
    ap.add_argument('--cache', default=str(Path(tempfile.gettempdir())/'qmd-nb-bench-models'), help='converted models')
    a = ap.parse_args()
    import torch
    from sentence_transformers import SentenceTransformer
    from qmd_nb.engine.chunk import wordpiece_counter
    texts = make_chunks(a.n); ns = wordpiece_counter()(texts)
    print(f'{len(texts)} chunks, word pieces min {min(ns)} mean {np.mean(ns):.0f} max {max(ns)}; '
          f'torch {torch.__version__}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}')
    plain = SentenceTransformer(model_dir(), device='cpu')
    t = time.perf_counter(); fast = OpenVINOEmbedder(cache_dir=a.cache); fast.embed_docs(texts[:4])
    print(f'openvino {fast.precision or "bf16"} (the default here): model ready in {time.perf_counter() - t:.1f} s '
          f'(converted{" and quantized" if fast.precision == "int8" else ""} once, then cached in {a.cache})')
    b16 = OpenVINOEmbedder(cache_dir=a.cache, precision='bf16'); b16.embed_docs(texts[:4])
    tfast = TorchEmbedder(); tfast.embed_docs(texts[:4]); plain.encode(texts[:4])
    paths = {'plain sentence-transformers': lambda: plain.encode(texts),
             f'openvino {fast.precision or "bf16"} (default)': lambda: fast.embed_docs(texts),
             'torch bf16 sorted': lambda: tfast.embed_docs(texts)}
    if fast.precision == 'int8': paths['openvino bf16'] = lambda: b16.embed_docs(texts)
    if a.extra:
        f32 = OpenVINOEmbedder(cache_dir=a.cache, precision='f32')
        paths['openvino f32'] = lambda: f32.embed_docs(texts)
        paths['openvino bf16 batch 32'] = lambda: b16.embed_docs(texts, batch_size=32)
        paths['torch fp32 sorted'] = lambda: TorchEmbedder(precision='f32').embed_docs(texts)
    best, vecs = {k: 0.0 for k in paths}, {}
    for r in range(a.rounds):
        for k, f in paths.items():
            t = time.perf_counter(); vecs[k] = f(); dt = time.perf_counter() - t
            best[k] = max(best[k], len(texts) / dt)
            print(f'  round {r + 1}: {k:30s} {len(texts) / dt:6.1f} chunks/s', flush=True)
    ref, base = vecs['plain sentence-transformers'], best['plain sentence-transformers']
    print(f'\nthroughput, best of {a.rounds} (chunks of ~250 word pieces):')
    for k in paths:
        lo, mean = cosines(vecs[k], ref)
        print(f'  {k:30s} {best[k]:6.1f} chunks/s  speedup {best[k] / base:4.2f}x  cosine to fp32 min {lo:.6f} mean {mean:.6f}')
    qs = queries(a.queries)
    print(f'\nsingle-query latency over {len(qs)} SciFact queries (each new to the cache):')
    lat = {'plain sentence-transformers': lambda q: plain.encode(q),
           f'openvino {fast.precision or "bf16"}, {fast.query_threads} threads (default)': lambda q: fast._encode_query(q),
           'torch bf16, 1 thread': lambda q: tfast._encode_query(q)}
    if a.extra:
        one = OpenVINOEmbedder(cache_dir=a.cache, query_threads=1)
        lat['openvino bf16, 1 thread'] = lambda q: one._encode_query(q)
    for k, (p50, p95) in latencies(lat, qs).items(): print(f'  {k:36s} p50 {p50:6.2f} ms  p95 {p95:6.2f} ms')
    for q in qs: fast.embed_query(q)
    p50, p95 = latencies({'cached': fast.embed_query}, qs)['cached']
    print(f'  {"repeated query (LRU cache)":36s} p50 {p50:6.3f} ms  p95 {p95:6.3f} ms')
    lo, mean = cosines(np.stack([fast.embed_query(q) for q in qs]), plain.encode(qs))
    print(f'  query vectors, cosine to fp32: min {lo:.6f} mean {mean:.6f}')

if __name__ == '__main__': main()
