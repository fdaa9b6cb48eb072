"The ranking lab against `qmd-nb eval` with the real model: a 200-document SciFact subset built here (twice the retrieval depth of 100, so lists are cut as on a large corpus), and full SciFact when its eval store is cached."
import json, os, random, subprocess, sys
from pathlib import Path
import pytest
from conftest import DATA, QMD_BIN

SCIFACT = DATA/'scifact'

def scifact_subset(folder:Path, n_queries:int=40, n_docs:int=200, seed:int=0) -> Path:
    "A BEIR folder with the first `n_queries` SciFact queries, their relevant documents and random others up to `n_docs`."
    folder.mkdir(parents=True, exist_ok=True)
    queries = [json.loads(l) for l in open(SCIFACT/'queries.jsonl', encoding='utf-8')]
    qrels = [l.split('\t') for l in (SCIFACT/'qrels.tsv').read_text(encoding='utf-8').splitlines()[1:] if l.strip()]
    corpus = [json.loads(l) for l in open(SCIFACT/'corpus.jsonl', encoding='utf-8')]
    judged = list(dict.fromkeys(r[0] for r in qrels))[:n_queries]
    keep = {r[1] for r in qrels if r[0] in judged}
    others = [c['_id'] for c in corpus if c['_id'] not in keep]; random.Random(seed).shuffle(others)
    keep |= set(others[:n_docs - len(keep)])
    (folder/'corpus.jsonl').write_text(''.join(json.dumps(c) + '\n' for c in corpus if c['_id'] in keep), encoding='utf-8')
    (folder/'queries.jsonl').write_text(''.join(json.dumps(q) + '\n' for q in queries if q['_id'] in judged), encoding='utf-8')
    (folder/'qrels.tsv').write_text('query-id\tcorpus-id\tscore\n' + ''.join('\t'.join(r) + '\n' for r in qrels if r[0] in judged), encoding='utf-8')
    return folder

SETTINGS = [{}, {'rerank': 'none'}, {'expansion': 'prf'}, {'fusion': 'rrf', 'rrf_k': 20},
            {'expansion': 'prf', 'fusion': 'rrf', 'probe_min_score': 0.5, 'bonus_first': 0.1, 'original_weight': 1.5},
            {'rerank_top': 15, 'blend_top3': 0.5, 'blend_rest': 0.2}, {'lex_weight': 0.6, 'vec_weight': 1.4},
            {'depth': 50, 'expansion': 'prf', 'prf_terms': 5, 'prf_vec_beta': 1.0}, {'rerank_window': 2},
            {'cited_quoted': False, 'cited_weight': 0.4, 'authority_title_words': 10}, {'cited_quoted': False, 'cited_weight': 0.4, 'authority_named': False},
            {'window_weight': 2.0, 'window_depth': 50, 'rerank': 'none', 'vec_weight': 1.5}, {'window_weight': 1.0, 'alias_depth': 0}]

@pytest.fixture(scope='module')
def subset(tmp_path_factory):
    from qmd_nb.notebook.lab import beir_lab
    root = tmp_path_factory.mktemp('lab')
    folder, env = scifact_subset(root/'scifact-200'), {**os.environ, 'QMD_NB_HOME': str(root/'home')} # embedding it and its windows: most of the time
    return folder, env, beir_lab(folder, env, progress=False)

@pytest.mark.parametrize('over', SETTINGS, ids=lambda s: ','.join(f'{k}={v}' for k, v in s.items()) or 'defaults')
def test_lab_equals_evaluate(subset, over):
    from qmd_nb.notebook.lab import lab_metrics
    from qmd_nb.notebook.eval import evaluate
    from qmd_nb.engine.hybrid import QueryParams
    folder, env, cache = subset
    p = QueryParams().updated(**over)
    ev = evaluate(folder, 'query', env, p, progress=False)
    lab = lab_metrics(cache, p)
    assert lab.per_query == ev.per_query # every query, every metric, to the bit
    assert (lab.ndcg10, lab.recall100, lab.mrr10) == (ev.ndcg10, ev.recall100, ev.mrr10)
    assert lab_metrics(cache, p, exact=True).per_query == ev.per_query

def test_lab_equals_eval_command(subset):
    "The command line the lab shows prints the lab's numbers."
    from qmd_nb.notebook.lab import lab_metrics, eval_command
    from qmd_nb.engine.hybrid import QueryParams
    folder, env, cache = subset
    p = QueryParams().updated(fusion='rrf', rrf_k=30.0, rerank_top=20)
    cmd = eval_command(p, folder).split()[1:] + ['--json']
    out = json.loads(subprocess.run([QMD_BIN, *cmd], env=env, capture_output=True, text=True, check=True, timeout=600, encoding='utf-8').stdout)
    lab = lab_metrics(cache, p).to_json()
    assert {k: out[k] for k in ('ndcg@10', 'recall@100', 'mrr@10', 'queries')} == {k: lab[k] for k in ('ndcg@10', 'recall@100', 'mrr@10', 'queries')}

def test_apply_reaches_query_command(subset, tmp_path):
    "What the lab applies is what `qmd-nb query` then uses (read back through QueryParams.from_settings)."
    from qmd_nb.notebook.lab import apply_params
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.hybrid import QueryParams
    env = {**os.environ, 'QMD_NB_HOME': str(tmp_path/'home')}
    p = QueryParams().updated(fusion='rrf', rrf_k=25.0, rerank_top=30, expansion='prf')
    apply_params(Store(env=env), p)
    code = "from qmd_nb.engine.store import Store; from qmd_nb.engine.hybrid import QueryParams; print(QueryParams.from_settings(Store().config.settings) == " \
           "QueryParams().updated(fusion='rrf', rrf_k=25.0, rerank_top=30, expansion='prf'))"
    assert subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, check=True, encoding='utf-8').stdout.strip() == 'True'

@pytest.mark.skipif(not os.environ.get('QMD_NB_SCIFACT_HOME'), reason="set QMD_NB_SCIFACT_HOME to a home with SciFact's eval store (embedding it takes ~5 min)")
def test_scifact_defaults_equal_evaluate():
    "Full SciFact (809 train queries), default parameters and RRF: the lab's numbers are evaluate's."
    from qmd_nb.notebook.lab import beir_lab, lab_metrics
    from qmd_nb.notebook.eval import evaluate
    from qmd_nb.engine.hybrid import QueryParams
    env = {**os.environ, 'QMD_NB_HOME': os.environ['QMD_NB_SCIFACT_HOME']}
    cache = beir_lab(SCIFACT, env, progress=False)
    for p in (QueryParams(), QueryParams().updated(fusion='rrf', expansion='prf')):
        assert lab_metrics(cache, p).per_query == evaluate(SCIFACT, 'query', env, p, progress=False).per_query
