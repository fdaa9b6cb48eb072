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

def test_backends_rank_alike_on_real_pages(tmp_path):
    "bm25s and rank-bm25 with the same parameters give the same scores, hence the same ranking, on 400 tldr pages."
    from qmd_nb.store import Store
    from qmd_nb.index import add_collection
    from qmd_nb.keyword import KeywordIndex, BM25Params, build_keyword_index
    from qmd_nb.text import Analyzer
    src = sorted((DATA/'tldr-pages'/'pages'/'common').glob('*.md'))[:400] if (DATA/'tldr-pages'/'pages').exists() else sorted((DATA/'tldr-pages').rglob('*.md'))[:400]
    root = tmp_path/'pages'; root.mkdir()
    for p in src: (root/p.name).write_bytes(p.read_bytes())
    st = Store(env={'QMD_NB_HOME': str(tmp_path/'home')})
    add_collection(st, root, name='p', progress=False)
    a = KeywordIndex(build_keyword_index(st, BM25Params(backend='bm25s')))
    b = KeywordIndex(build_keyword_index(st, BM25Params(backend='rank_bm25')))
    an = Analyzer()
    for q in ['compress files', 'list directory contents', 'git commit changes', 'network interface address', 'kill process by name']:
        tids = a.term_ids(an.terms(q))
        sa, sb = a.scores(tids), b.scores(tids)
        np.testing.assert_allclose(sa, sb, rtol=1e-4, atol=1e-5)
        assert list(np.lexsort((a.doc_ids, -sa))[:10]) == list(np.lexsort((b.doc_ids, -sb))[:10])

def test_chunks_fit_the_model_on_real_pages():
    "Every chunk of real markdown, with its title and headings, fits in the model's 256 word pieces."
    from qmd_nb.chunk import chunk_lines, wordpiece_counter
    from qmd_nb.text import split_front_matter, doc_title
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
