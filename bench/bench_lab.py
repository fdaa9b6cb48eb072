"""Ranking lab figures (issue: notebooks, ranking lab), on SciFact train (809 queries).

Usage: python bench/bench_lab.py [--home DIR] [--no-check]

Prints the one-off cache build time (retrieval lists with and without feedback, reranker scores of every pooled
document), the time the lab takes to recompute nDCG@10 / Recall@100 / MRR@10 after each kind of control change
(goal <= 1 s), and checks the lab's numbers against `evaluate` (what `qmd-nb eval` runs) for the defaults and one
RRF setting. The SciFact eval store is reused from --home (QMD_NB_HOME; default ~/.cache/qmd-nb's home):
embedding SciFact from scratch takes ~5 minutes.
"""
import argparse, os, statistics, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent/'shared'/'data'

CHANGES = [ # one control moved at a time, as in the widget
    ('blend_top3', 0.6), ('blend_top10', 0.5), ('blend_rest', 0.4), ('rerank_top', 20), ('rerank_top', 60),
    ('lex_weight', 0.8), ('vec_weight', 1.2), ('original_weight', 1.5), ('expansion', 'prf'), ('expansion_weight', 0.5),
    ('probe_min_score', 0.7), ('fusion', 'rrf'), ('rrf_k', 30.0), ('bonus_first', 0.1), ('bonus_top3', 0.0), ('rerank', 'none'),
    ('rerank', 'embed'), ('fusion', 'zscore'), ('expansion', 'none')]

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--home', default=os.environ.get('QMD_NB_HOME'), help='QMD_NB_HOME holding the SciFact eval store')
    ap.add_argument('--no-check', action='store_true', help='skip the comparison with evaluate (~1 min per setting)')
    a = ap.parse_args()
    env = {**os.environ, 'HF_HUB_OFFLINE': '1', **({'QMD_NB_HOME': a.home} if a.home else {})}
    from qmd_nb.notebook.lab import beir_lab, lab_metrics
    from qmd_nb.engine.hybrid import QueryParams
    folder = DATA/'scifact'
    t = time.time(); c = beir_lab(folder, env, progress=False); build = time.time() - t
    parts = {k[0]: round(v, 1) for k, v in c.seconds.items()}
    print(f"cache build (one-off): {build:.1f} s for {len(c.qids)} queries (retrieval lists {parts.get('lists')} s, reranker scores {parts.get('rerank')} s; "
          f"the rest loads the model and checks the eval store)", flush=True)
    p = QueryParams(); r = lab_metrics(c, p) # first call builds the padded arrays
    print(f"defaults: {r.to_json()}", flush=True)
    times = []
    for name, v in CHANGES:
        p = p.updated(**{name: v})
        t = time.perf_counter(); r = lab_metrics(c, p); dt = time.perf_counter() - t; times.append(dt)
        print(f"  {name + '=' + str(v):22s} recomputed in {dt * 1000:6.0f} ms  nDCG@10 {r.ndcg10:.4f}  Recall@100 {r.recall100:.4f}  MRR@10 {r.mrr10:.4f}", flush=True)
    print(f"recompute after a control change: median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms "
          f"over {len(times)} changes (goal <= 1000 ms)", flush=True)
    if not a.no_check:
        from qmd_nb.notebook.eval import evaluate
        for p in (QueryParams(), QueryParams().updated(fusion='rrf', rrf_k=30.0, expansion='prf')):
            lab, ev = lab_metrics(c, p), evaluate(folder, 'query', env, p, progress=False)
            same = lab.per_query == ev.per_query and (lab.ndcg10, lab.recall100, lab.mrr10) == (ev.ndcg10, ev.recall100, ev.mrr10)
            print(f"lab vs evaluate {p.fusion}/{p.expansion}: nDCG@10 {lab.ndcg10!r} vs {ev.ndcg10!r}; identical on every query: {same}", flush=True)

if __name__ == '__main__': main()
