"""Ranking figures for issue 16 (documentation ranking), on three sets at once: winserver-ps, tldr-pages and SciFact.

Usage: python bench/bench_ranking.py [--home DIR] [--query] [--skip-scifact] [--ablate] [--set KEY=VALUE ...] [--ws-queries N]

Prints, for `search` (and with --query for `query`, after embedding what is not embedded yet, which takes long):
winserver-ps known-item MRR@10 / Hit@1 / Hit@10 / p50 (knownitem-400.tsv), tldr-pages known-item (200 page
descriptions, bench/known_item.py's sample), the tldr question set (bench/questions-tldr.tsv; and its tuning split
bench/questions-tldr-dev.tsv), SciFact nDCG@10,
keyword search latency in-process on winserver-ps (hits only, and whole results with snippets), and the wall time of a
`qmd-nb search` process for a quoted 14-word phrase and for the same words unquoted (median of 7).
Indexes live in --home (reused when given: the first run indexes winserver-ps and tldr-pages; a reused index is
brought up to date first, so that an index an older version wrote is rebuilt in this format).
--ablate also prints, for each mode run, the four sets with each of issue 16's ranking rules turned off in turn
(`ABLATIONS`: overview pages yielding, pages the others point to and which titles count as names, exactness,
proximity, field weights, the lead sentence, k1 as before the retune, near-copies, versions, alias pages, quotations, the
vector floor): what each rule is worth, measured (with --query: also in `query`, a few minutes per row).
--set KEY=VALUE (repeatable) runs every set with those query parameters, as `qmd-nb query --set` takes them; e.g. the
mpnet reranker: --set rerank_embedder=all-mpnet-base-v2 --set rerank_title=true --set short_blend_top3=0.4 (and the README's others).
--ws-queries N scores only the first N winserver-ps known items (a new reranker model reads every candidate's windows
the first time it sees it: minutes per hundred long pages on two cores).
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent/'shared'/'data'
QMD = str(Path(sys.executable).parent/'qmd-nb')
sys.path.insert(0, str(ROOT/'bench'))
PHRASE = 'The cmdlet immediately returns an object that represents the job and then displays the command prompt'

def store_for(home:Path, name:str, folder:Path):
    "A store holding one collection of `folder`, indexed on first use (a reused one is taken as it is)."
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.index import add_collection, update
    st = Store(env={'QMD_NB_HOME': str(home/name)})
    t = time.perf_counter()
    if name not in st.config.collections: add_collection(st, folder, name=name, progress=False)
    else: update(st, progress=False)
    print(f"{name}: {st.q('SELECT COUNT(*) FROM documents')[0][0]} documents ready in {time.perf_counter() - t:.1f} s", flush=True)
    return st

def known(st, tsv, mode:str, params=None) -> dict:
    from qmd_nb.notebook.eval import known_item
    r = known_item(st, tsv, mode, params, progress=False).to_json()
    return {k: r[k] for k in ('mrr@10', 'hit@1', 'hit@10', 'p50_ms', 'queries')}

def latency(st, queries:list[str]) -> dict:
    "In-process p50 of keyword hits alone and of whole results (snippets, docids, near-copies), warm."
    from qmd_nb.engine.search import keyword_hits, search
    for q in queries[:20]: search(st, q)
    out = {}
    for name, f in (('hits', keyword_hits), ('search', search)):
        lat = []
        for q in queries: t = time.perf_counter(); f(st, q, 10); lat.append((time.perf_counter() - t) * 1000)
        out[f'{name}_p50_ms'] = round(statistics.median(lat), 2)
    return out

def process_times(home:Path) -> dict:
    "Wall time of whole `qmd-nb search` processes: a quoted 14-word phrase and the same words, median of 7."
    env = {**os.environ, 'QMD_NB_HOME': str(home)}
    out = {}
    for name, q in (('quoted_phrase_s', f'"{PHRASE}"'), ('same_words_s', PHRASE)):
        ts = []
        for _ in range(7):
            t = time.perf_counter(); subprocess.run([QMD, 'search', q, '-n', '10'], env=env, check=True, capture_output=True); ts.append(time.perf_counter() - t)
        out[name] = round(statistics.median(ts), 3)
    return out

ABLATIONS = (('overview pages do not yield', dict(overview_yield=False)), ('no bonus for pages the others name', dict(authority_weight=0)),
             ('any short title counts as a name', dict(authority_named=False)), ('no exactness or proximity', dict(phrase_weight=0, near_weight=0)),
             ('no exactness bonus', dict(phrase_weight=0)), ('no proximity bonus', dict(near_weight=0)),
             ('all fields weigh 1', dict(title_weight=1, meta_weight=1, heading_weight=1, lead_weight=1)), ('lead weighs 1', dict(lead_weight=1)),
             ('k1 0.9 (before issue 16)', dict(k1=0.9)), ('near-copies not collapsed', dict(duplicate_threshold=1.01, fold_versions=False)),
             ('versions not folded', dict(fold_versions=False)),
             ('main copies not first', dict(main_copy_first=False)), ('alias pages not folded', dict(alias_depth=0)),
             ('no quotation bonus (query)', dict(quote_bonus=0)), ('no cited bonus (query)', dict(cited_weight=0)), ('no vector floor (query)', dict(vec_floor=0)))

def ablate(sets:dict, home:Path, mode:str='search', embedder=None, base=None) -> dict:
    "Figures in `mode` (MRR@10; nDCG@10 on SciFact) with each rule off in turn, next to the setting in force."
    from qmd_nb.engine.hybrid import QueryParams
    from qmd_nb.notebook.eval import known_item, evaluate
    out = {}
    for label, over in (('as tuned', {}),) + ABLATIONS:
        if mode == 'search' and label.endswith('(query)'): continue # rules of the hybrid pipeline alone
        p = (base or QueryParams()).updated(**over)
        r = {name: known_item(st, tsv, mode, p, embedder=embedder, progress=False).to_json()['mrr@10'] for name, (st, tsv) in sets.items()}
        r['scifact'] = evaluate(DATA/'scifact', mode, {'QMD_NB_HOME': str(home/'eval')}, p, embedder=embedder, progress=False).to_json()['ndcg@10']
        out[label] = r; print(f'{mode}, {label:36s} {json.dumps(r)}', flush=True)
    return out

def main():
    ap = argparse.ArgumentParser(); ap.add_argument('--home'); ap.add_argument('--query', action='store_true'); ap.add_argument('--skip-scifact', action='store_true'); ap.add_argument('--ablate', action='store_true')
    ap.add_argument('--set', action='append', default=[], metavar='KEY=VALUE'); ap.add_argument('--ws-queries', type=int)
    a = ap.parse_args()
    from qmd_nb.engine.hybrid import QueryParams
    p = QueryParams().updated(**dict(kv.split('=', 1) for kv in a.set)) if a.set else None
    home = Path(a.home or tempfile.mkdtemp(prefix='qmdnb-rank-')); home.mkdir(parents=True, exist_ok=True)
    from known_item import sample
    tldr_ki = home/'tldr-known-item.tsv'
    tldr_ki.write_text(''.join(f'{q}\t{p}\n' for p, q in sample(200, 0)), encoding='utf-8')
    ws, tl = store_for(home, 'ws', DATA/'winserver-ps'/'docset'), store_for(home, 'tldr', DATA/'tldr-pages')
    ws_ki = DATA/'winserver-ps'/'knownitem-400.tsv'
    if a.ws_queries:
        ws_ki = home/f'ws-known-item-{a.ws_queries}.tsv'
        ws_ki.write_text(''.join((DATA/'winserver-ps'/'knownitem-400.tsv').read_text(encoding='utf-8').splitlines(keepends=True)[:a.ws_queries]), encoding='utf-8')
    modes = ['search'] + (['query'] if a.query else [])
    if a.query:
        from qmd_nb.engine.vectors import embed
        from qmd_nb.engine.embed import get_embedder
        for st in (tl, ws): t = time.perf_counter(); s = embed(st, get_embedder(st.config.settings), progress=False); print(f'embedded {s.chunks} chunks in {time.perf_counter() - t:.0f} s', flush=True)
    res = {}
    for m in modes:
        res[f'winserver-ps known-item {m}'] = known(ws, ws_ki, m, p)
        res[f'tldr known-item {m}'] = known(tl, tldr_ki, m, p)
        res[f'tldr questions {m}'] = known(tl, ROOT/'bench'/'questions-tldr.tsv', m, p)
        res[f'tldr questions dev {m}'] = known(tl, ROOT/'bench'/'questions-tldr-dev.tsv', m, p) # the tuning split, not a goal
    if not a.skip_scifact:
        from qmd_nb.notebook.eval import evaluate
        for m in modes:
            r = evaluate(DATA/'scifact', m, {'QMD_NB_HOME': str(home/'eval')}, p, progress=False).to_json()
            res[f'scifact {m}'] = {k: r[k] for k in ('ndcg@10', 'recall@100', 'mrr@10', 'p50_ms')}
    qs = [l.split('\t')[0] for l in (DATA/'winserver-ps'/'knownitem-400.tsv').read_text(encoding='utf-8').splitlines() if l.strip()]
    res['winserver-ps keyword latency'] = latency(ws, qs)
    res['winserver-ps search process'] = process_times(home/'ws')
    if a.ablate:
        sets = {'winserver-ps': (ws, ws_ki), 'tldr known-item': (tl, tldr_ki), 'tldr questions': (tl, ROOT/'bench'/'questions-tldr.tsv'),
                'tldr questions dev': (tl, ROOT/'bench'/'questions-tldr-dev.tsv')}
        for m in modes:
            em = get_embedder(ws.config.settings) if m == 'query' else None
            for label, r in ablate(sets, home, m, em, p).items(): res[f'{m}, {label}'] = r
    for k, v in res.items(): print(f'{k:32s} {json.dumps(v)}')

if __name__ == '__main__': main()
