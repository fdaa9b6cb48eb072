"The incremental keyword index on real pages: after any sequence of changes it ranks exactly as a fresh build, survives a writer killed at any moment, and never makes readers wait."
import os, random, signal, subprocess, sys, time
from pathlib import Path
import numpy as np
import pytest
from conftest import DATA, QMD_BIN

QUERIES = ['compress files', 'list directory contents', 'git commit changes', 'network interface address', 'kill process by name',
           '"create an archive"', 'show disk usage -docker', 'download a file from a url', 'edit a text file', 'search for a pattern']

def _copy_pages(dst:Path, n:int, seed:int=0) -> list[Path]:
    "n tldr pages from common/ (a fixed sample), copied into dst."
    src = sorted((DATA/'tldr-pages'/'common').glob('*.md'))
    dst.mkdir(parents=True, exist_ok=True)
    out = []
    for p in random.Random(seed).sample(src, n):
        q = dst/p.name; q.write_bytes(p.read_bytes()); out.append(q)
    return out

def _top10(st) -> dict:
    "query -> [(path, score)] of the keyword top 10, with every copy shown."
    from qmd_nb.engine.search import search
    return {q: [(r.path, round(r.score, 6)) for r in search(st, q, 10, collapse=False)] for q in QUERIES}

def _store(home:Path):
    from qmd_nb.engine.store import Store
    return Store(env={'QMD_NB_HOME': str(home)})

def _edit(pages:list[Path], root:Path, rng:random.Random, step:int):
    "One round of changes a person makes: edit some pages, delete one, add one, rename one."
    for p in rng.sample([p for p in pages if p.exists()], 3):
        p.write_text(p.read_text(encoding='utf-8') + f'\n- Step {step}: compress and archive the files again\n', encoding='utf-8')
    gone = rng.choice([p for p in pages if p.exists()]); gone.unlink()
    new = root/f'new-{step}.md'; new.write_text(f'# new {step}\n\n> Kill a process by name, step {step}.\n', encoding='utf-8'); pages.append(new)
    old = rng.choice([p for p in pages if p.exists()]); moved = root/f'moved-{step}-{old.name}'; old.rename(moved); pages.append(moved)

def test_incremental_equals_fresh_build(tmp_path):
    "Twelve rounds of edits, deletions, additions and renames, each applied as a segment: top 10 and scores equal a fresh build's."
    from qmd_nb.engine.index import add_collection, update
    from qmd_nb.engine.keyword import keyword_index, load_commit, refresh
    root = tmp_path/'pages'; pages = _copy_pages(root, 1500)
    st = _store(tmp_path/'inc'); add_collection(st, root, name='p', progress=False)
    rng, seen = random.Random(1), set()
    for step in range(12):
        _edit(pages, root, rng, step); update(st, progress=False)
        seen |= {s['name'] for s in load_commit(st.paths.keyword_dir)['segments']}
    c = load_commit(st.paths.keyword_dir)
    assert len(seen) > len(c['segments']) >= 2 # segments were added and merged on the way, and more than one remains
    assert any(s['deleted'] for s in c['segments']) or len(c['segments']) > 1
    a = _top10(st)
    refresh(st, full=True) # the same catalog, its keyword index built whole
    assert len(load_commit(st.paths.keyword_dir)['segments']) == 1
    assert _top10(st) == a # identical, ties (broken by catalog id) included
    fresh = _store(tmp_path/'fresh'); add_collection(fresh, root, name='p', progress=False)
    b = _top10(fresh) # a new catalog numbers documents otherwise: equal scores may swap places
    for q in QUERIES: # the same scores; the same pages above the last place's score (a tie there may be cut either way)
        assert [x[1] for x in a[q]] == [x[1] for x in b[q]], q
        cut = a[q][-1][1] if a[q] else 0
        assert {x for x in a[q] if x[1] > cut} == {x for x in b[q] if x[1] > cut}, q
    assert sum(len(v) for v in a.values()) > 50
    assert keyword_index(st).n_live == keyword_index(fresh).n_live == len(list(root.glob('*.md')))

def test_incremental_scores_equal_rank_bm25(tmp_path):
    "After incremental updates, BM25F scores still equal rank-bm25's over the current catalog (the oracle)."
    from rank_bm25 import BM25Okapi
    from qmd_nb.engine.index import add_collection, update
    from qmd_nb.engine.keyword import keyword_index, lucene_idf, _rows, BM25Params
    from qmd_nb.engine.segment import _doc_tokens
    from qmd_nb.engine.fields import plain_terms
    from qmd_nb.engine.text import Analyzer
    root = tmp_path/'pages'; pages = _copy_pages(root, 400, seed=2)
    st = _store(tmp_path/'home'); add_collection(st, root, name='p', progress=False)
    rng = random.Random(3)
    for step in range(3): _edit(pages, root, rng, step); update(st, progress=False)
    ki, an = keyword_index(st), Analyzer()
    assert len(ki.segs) > 1
    class Lucene(BM25Okapi):
        def _calc_idf(s, nd): s.idf = {w: float(lucene_idf(f, s.corpus_size)) for w, f in nd.items()}
    p = BM25Params(title_weight=1, meta_weight=1, heading_weight=1, lead_weight=1, body_weight=1)
    docs = _rows(st, None)
    oracle = Lucene([plain_terms(' '.join(_doc_tokens(d, an))) for d in docs], k1=p.k1, b=p.b)
    for q in QUERIES[:5]:
        terms = an.terms(q)
        np.testing.assert_allclose(ki.scores(terms, p)[0][ki.slots([d.id for d in docs])], oracle.get_scores(terms) / (p.k1 + 1), rtol=1e-5, atol=1e-6)

WRITER = """
import sys, time
from pathlib import Path
from qmd_nb.engine.store import Store
from qmd_nb.engine.index import update
st = Store(env={'QMD_NB_HOME': sys.argv[1]}); root = Path(sys.argv[2])
for i in range(10_000):
    for p in sorted(root.glob('*.md'))[i % 7::97]: p.write_text(p.read_text() + f'\\nround {i} archive words\\n')
    update(st, progress=False)
"""

def test_writer_killed_at_any_moment(tmp_path):
    "A writer killed (SIGKILL) at random moments leaves a commit readers can load, and the next update brings it level with a fresh build."
    from qmd_nb.engine.index import add_collection, update
    from qmd_nb.engine.keyword import keyword_index, load_commit, refresh
    root = tmp_path/'pages'; _copy_pages(root, 600, seed=4)
    home = tmp_path/'home'; st = _store(home); add_collection(st, root, name='p', progress=False)
    rng = random.Random(5)
    for _ in range(6):
        w = subprocess.Popen([sys.executable, '-c', WRITER, str(home), str(root)])
        time.sleep(rng.uniform(0.3, 2.5)); w.send_signal(signal.SIGKILL); w.wait()
        r = _store(home) # a new reader: the last commit is there and whole
        assert load_commit(r.paths.keyword_dir) is not None
        assert keyword_index(r, rebuild_stale=False).n_live == len(list(root.glob('*.md')))
        r.close()
    st = _store(home); update(st, progress=False)
    a = _top10(st); refresh(st, full=True)
    assert _top10(st) == a
    assert not [p for p in st.paths.keyword_dir.iterdir() if p.name.startswith('.tmp')] # leftovers of killed writers are gone

def test_search_does_not_wait_for_a_writer(tmp_path):
    "While another process holds the write lock (a long update), a search process answers from the last commit at once."
    from qmd_nb.engine.index import add_collection
    root = tmp_path/'pages'; pages = _copy_pages(root, 200, seed=6)
    home = tmp_path/'home'; st = _store(home); add_collection(st, root, name='p', progress=False)
    pages[0].write_text('# changed\n\nnot yet indexed\n', encoding='utf-8')
    holder = subprocess.Popen([sys.executable, '-c', f"""
import time
from qmd_nb.engine.store import Store
st = Store(env={{'QMD_NB_HOME': {str(home)!r}}})
with st.writing():
    print('locked', flush=True); time.sleep(30)
"""], stdout=subprocess.PIPE, text=True, encoding="utf-8")
    try:
        assert holder.stdout.readline().strip() == 'locked'
        t = time.time()
        r = subprocess.run([QMD_BIN, 'search', 'compress files', '--format', 'files'], env={**os.environ, 'QMD_NB_HOME': str(home)},
                           capture_output=True, text=True, encoding="utf-8", timeout=25)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() and time.time() - t < 15 # answered while the lock is held (a waiting reader would take 30 s)
    finally:
        holder.kill(); holder.wait()

def _catalog(home:Path) -> int:
    "Bytes of the catalog and its log on disk."
    return sum(f.stat().st_size for f in (home/'cache'/'index').glob('catalog.sqlite*'))

def test_deleted_folder_gives_its_space_back(tmp_path):
    "A folder of 3,000 pages deleted: `update` gives the catalog's freed pages back, for a new catalog and an older one without auto-vacuum alike."
    import shutil, sqlite3
    for home, legacy in ((tmp_path/'new', False), (tmp_path/'old', True)):
        root = tmp_path/'pages'; _copy_pages(root/'keep', 20); big = root/'big'; big.mkdir()
        for i in range(3000): (big/f'p{i}.md').write_text(f'# page {i}\n\n' + f'word{i} lorem ipsum dolor sit amet\n' * 120, encoding='utf-8')
        if legacy: # a catalog made before incremental auto-vacuum, as SQLite makes them by default
            (home/'cache'/'index').mkdir(parents=True); db = sqlite3.connect(home/'cache'/'index'/'catalog.sqlite')
            db.execute('CREATE TABLE kv(key TEXT PRIMARY KEY, value TEXT)'); db.commit(); db.close()
        env = dict(os.environ, QMD_NB_HOME=str(home), XDG_CONFIG_HOME=str(home/'cfg'))
        run = lambda *a: subprocess.run([QMD_BIN, *a], env=env, capture_output=True, text=True, encoding='utf-8', timeout=600)
        assert run('collection', 'add', str(root), '--name', 'p').returncode == 0
        full = _catalog(home)
        shutil.rmtree(big)
        r = run('update'); assert r.returncode == 0 and '3000 removed' in r.stdout, r.stdout + r.stderr
        db = sqlite3.connect(home/'cache'/'index'/'catalog.sqlite')
        assert db.execute('PRAGMA auto_vacuum').fetchone()[0] == 2 and db.execute('PRAGMA freelist_count').fetchone()[0] == 0
        assert full > 20 << 20 and _catalog(home) < 1 << 20, (legacy, full, _catalog(home))
        assert 'big/' not in run('search', 'lorem ipsum').stdout and 'keep/' in run('multi-get', 'p/keep/*.md', '--json').stdout
        shutil.rmtree(root)
