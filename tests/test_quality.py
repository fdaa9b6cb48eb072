"Ranking quality on real data: the figures the foundation issue asks for, checked by the evaluation code."
import json, subprocess, sys
import numpy as np
from conftest import DATA, ROOT

sys.path.insert(0, str(ROOT/'bench'))

def test_scifact_bm25_ndcg(qmd):
    r = qmd('eval', DATA/'scifact', '--mode', 'search', '--json')
    m = json.loads(r.stdout)
    assert set(m) >= {'ndcg@10', 'recall@100', 'mrr@10', 'p50_ms', 'p95_ms', 'queries'}
    assert m['queries'] == 809
    assert m['ndcg@10'] >= 0.67, m # published BM25 on SciFact: 0.679

def test_tldr_known_item_mrr(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT/'bench'/'known_item.py'), '--home', str(tmp_path)], capture_output=True, text=True, timeout=600, encoding='utf-8')
    mrr = float(r.stdout.split('MRR@10 ')[1].split()[0])
    assert mrr >= 0.92, r.stdout

def _pages(tmp_path, n=400):
    "A store over the first n tldr pages of common/."
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.index import add_collection
    src = sorted((DATA/'tldr-pages'/'common').glob('*.md'))[:n]
    root = tmp_path/'pages'; root.mkdir()
    for p in src: (root/p.name).write_bytes(p.read_bytes())
    st = Store(env={'QMD_NB_HOME': str(tmp_path/'home')})
    add_collection(st, root, name='p', progress=False)
    return st, root

def test_bm25f_equals_rank_bm25_on_real_pages(tmp_path):
    "With whole field weights, our BM25F scores are rank-bm25's BM25 over each field repeated that many times (the oracle)."
    from rank_bm25 import BM25Okapi
    from qmd_nb.engine.keyword import keyword_index, BM25Params, lucene_idf, _rows
    from qmd_nb.engine.segment import _doc_tokens
    from qmd_nb.engine.fields import FIELDS, MARKS, MARK_WORDS
    from qmd_nb.engine.text import Analyzer
    st, _ = _pages(tmp_path)
    class Lucene(BM25Okapi):
        def _calc_idf(s, nd): s.idf = {w: float(lucene_idf(f, s.corpus_size)) for w, f in nd.items()}
    p, an = BM25Params(title_weight=3, meta_weight=2, heading_weight=2, lead_weight=2, body_weight=1), Analyzer()
    def weighted(d):
        out, f = [], 'title'
        for t in _doc_tokens(d, an):
            if t in MARKS.values(): f = next(x for x, m in MARKS.items() if m == t)
            elif t[0] > '\x06' and t not in MARK_WORDS: out += [t] * int(p.weights[FIELDS.index(f)])
        return out
    docs, ki = _rows(st, None), keyword_index(st)
    oracle = Lucene([weighted(d) for d in docs], k1=p.k1, b=p.b)
    for q in ['compress files', 'list directory contents', 'git commit changes', 'network interface address', 'kill process by name']:
        terms = an.terms(q)
        ours = ki.scores(terms, p)[0][ki.slots([d.id for d in docs])]
        ref = oracle.get_scores(terms) / (p.k1 + 1)
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)
        assert list(np.argsort(-ours, kind='stable')[:10]) == list(np.argsort(-ref.astype(np.float32), kind='stable')[:10])

def test_chunks_fit_the_model_on_real_pages():
    "Every chunk of real markdown, with its title and headings, fits in the model's 256 word pieces."
    from qmd_nb.engine.chunk import chunk_lines, wordpiece_counter
    from qmd_nb.engine.text import split_front_matter, doc_title
    count = wordpiece_counter()
    files = sorted((DATA/'tldr-pages').rglob('*.md'))[:300]
    texts = [p.read_text(encoding='utf-8') for p in files]
    texts.append('# Long\n\n' + '\n\n'.join(t for t in texts[:40])) # a long document with many headings
    n = 0
    for t in texts:
        lines = t.split('\n'); _, start = split_front_matter(t)
        for c in chunk_lines(lines, doc_title({}, lines[start:], 'x.md'), start, count):
            assert count([c.embed_text])[0] <= 254 and c.start_line <= c.end_line
            assert c.text.count('```') % 2 == 0 # fences are never split
            n += 1
    assert n > 300
