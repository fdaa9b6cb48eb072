"Vectors and hybrid search end to end: the real model, a real Chroma store, real processes."
import re, signal, sqlite3, subprocess, time
from pathlib import Path
from conftest import write_tree, QMD_BIN

def test_embed_vsearch_query(qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes')
    miss = qmd('vsearch', 'how do I keep my files safe', ok=False)
    assert miss.returncode == 1 and "Vector index not found. Run 'qmd-nb embed' first to create embeddings." in miss.stderr
    q = qmd.json('query', 'copy files to the NAS', '--format', 'json') # no vectors: keyword search, no error
    assert q[0]['file'] == 'notes/backup.md'
    assert "Note: 8 documents with no vectors yet, so query finds them by their words only: run 'qmd-nb embed'" in qmd('query', 'copy files to the NAS').stderr
    assert 'Needs embedding: 8' in qmd('status').stdout
    out = qmd('embed').stdout
    assert re.match(r'Embedded 8 documents \(\d+ chunks: the model read \d+, the others repeat passages embedded before\) in [\d.]+ s$', out.strip()), out # big.md repeats itself
    st = qmd('status').stdout
    assert 'Needs embedding: 0' in st and 'Vector index: yes' in st
    assert 'Note:' not in qmd('vsearch', 'how do I keep copies of my data safe').stderr # every document has vectors
    v = qmd.json('vsearch', 'how do I keep copies of my data safe', '--format', 'json')
    assert v[0]['file'] == 'notes/backup.md' and all(r['score'] >= 0.3 for r in v)
    assert qmd.json('vsearch', 'italian food cooking', '-n', '1', '--format', 'json')[0]['file'] == 'notes/cooking/pasta.md'
    assert [r['file'] for r in qmd.json('vsearch', 'coffee', '-c', 'notes', '--min-score', '0.1', '--format', 'json')][0] == 'notes/cooking/café.md'
    h = qmd.json('query', 'how do I keep copies of my data safe', '--explain', '--format', 'json')
    assert h[0]['file'] == 'notes/backup.md' and all(r['score'] >= 0.01 for r in h) # no 0.00 tail without -n
    assert qmd('query', 'the of and to a').stdout.strip() == 'No results found for "the of and to a"' # as search and vsearch say
    e = h[0]['explain']
    assert {'lex:user', 'vec:user'} & set(e['lists']) and e['final'] == h[0]['score'] and 'rerank' in e
    text = qmd('query', 'nightly rsync backup', '--explain').stdout
    assert '  lists:  ' in text and '  fusion: ' in text and '  rerank: ' in text
    nr = qmd.json('query', 'nightly rsync backup', '--no-rerank', '--explain', '--format', 'json')
    assert nr[0]['explain']['rerank'] is None
    typed = qmd.json('query', 'lex: pasta\nvec: boiling water for spaghetti', '--format', 'json')
    assert typed[0]['file'] == 'notes/cooking/pasta.md'
    bad = qmd('query', 'x', '--set', 'fusion=max', ok=False)
    assert bad.returncode == 1 and 'fusion must be zscore or rrf' in bad.stderr

def test_renames_do_not_reembed(qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes'); qmd('embed')
    (notes/'cooking'/'pasta.md').rename(notes/'pasta-renamed.md')
    (notes/'tokyo.md').write_text('# Osaka\n\nA different city now.\n', encoding='utf-8')
    qmd('update')
    out = qmd('embed').stdout
    assert out.startswith('Embedded 1 documents') and 'dropped the vectors of 1 documents' in out
    assert qmd.json('vsearch', 'italian food cooking', '-n', '1', '--format', 'json')[0]['file'] == 'notes/pasta-renamed.md'

def test_killed_embed_resumes_and_search_works_meanwhile(qmd, tmp_path):
    words = "storage network backup restore snapshot mirror disk router switch firewall".split()
    root = write_tree(tmp_path/'many', {f'n{i}.md': f"# Note {i}\n\n" + ' '.join(words[(i * 7 + k) % 10] for k in range(300)) for i in range(400)})
    qmd('collection', 'add', root, '--name', 'many')
    p = subprocess.Popen([QMD_BIN, 'embed'], env=qmd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    db = qmd.home/'cache'/'index'/'catalog.sqlite'
    deadline, n = time.time() + 300, 0
    while time.time() < deadline and n < 64:
        try: n = sqlite3.connect(db).execute("SELECT COUNT(*) FROM embedded").fetchone()[0]
        except sqlite3.OperationalError: pass
        time.sleep(0.2)
    assert qmd('search', 'snapshot mirror', '-n', '3').returncode == 0 # searching works during embedding
    p.send_signal(signal.SIGKILL); p.wait()
    done = sqlite3.connect(db).execute("SELECT COUNT(*) FROM embedded").fetchone()[0]
    assert 64 <= done < 400
    assert f'Needs embedding: {400 - done}' in qmd('status').stdout
    out = qmd('embed').stdout
    assert out.startswith(f'Embedded {400 - done} documents')
    assert 'Needs embedding: 0' in qmd('status').stdout
    assert len(qmd.json('vsearch', 'router firewall', '-n', '5', '--format', 'json')) == 5

CHILD = """import sys; from pathlib import Path
from qmd_nb.engine.store import Store; from qmd_nb.engine.index import update; from qmd_nb.engine.embed import HashEmbedder
from qmd_nb.engine.vectors import embed
(Path(sys.argv[2])/'b.md').write_text('# B\\n\\nbeta words here\\n'); st = Store(env={'QMD_NB_HOME': sys.argv[1]}); update(st); embed(st, HashEmbedder(), progress=False)"""

def test_a_second_store_in_a_process_sees_what_another_process_embedded(tmp_path):
    "A notebook that opens a second Store after another process embedded: Chroma's cached system for the folder is the first Store's, from before."
    import sys
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.index import add_collection
    from qmd_nb.engine.embed import HashEmbedder
    from qmd_nb.engine.vectors import embed, vsearch
    d = write_tree(tmp_path/'n', {'a.md': '# A\n\nalpha words here\n'}); home = str(tmp_path/'home')
    first = Store(env={'QMD_NB_HOME': home}); add_collection(first, d, name='n'); embed(first, HashEmbedder(), progress=False)
    files = lambda st: [r.file for r in vsearch(st, HashEmbedder(), 'alpha', min_score=0)]
    assert files(first) == ['n/a.md']
    subprocess.run([sys.executable, '-c', CHILD, home, str(d)], check=True, timeout=300) # another process adds b.md and embeds it
    assert files(Store(env={'QMD_NB_HOME': home})) == ['n/a.md', 'n/b.md'] # 'Error finding id' before
    assert files(first) == ['n/a.md', 'n/b.md']

CHURN = """import sys; from pathlib import Path
import qmd_nb.engine.compact as C; C.COMPACT_MIN = 4
from qmd_nb.engine.store import Store; from qmd_nb.engine.index import update; from qmd_nb.engine.embed import HashEmbedder
from qmd_nb.engine.vectors import embed
d, st = Path(sys.argv[2]), Store(env={'QMD_NB_HOME': sys.argv[1]})
for r in range(int(sys.argv[3])):
    for i in range(6): (d/f'n{i}.md').write_text(f'# N{i}\\n\\nnote{i} words, version {r}\\n', encoding='utf-8')
    update(st); print(embed(st, HashEmbedder(), progress=False).compacted, flush=True)"""

def test_compaction_gives_back_deleted_vectors_while_another_process_searches(tmp_path, monkeypatch):
    "Another process's edits and embeds leave as many deleted vectors as live ones: its embed rebuilds the collection; a reader searching by HNSW meanwhile always finds every page."
    import sys
    import qmd_nb.engine.vectors as V
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.index import add_collection
    from qmd_nb.engine.embed import HashEmbedder
    from qmd_nb.engine.chroma import VectorStore, space_name
    from qmd_nb.engine.compact import _unlisted_segments, dead_vectors
    monkeypatch.setattr(V, 'EXACT_MAX', 0); monkeypatch.setattr(V, 'RECENT', 0) # Chroma's HNSW answers, not a saved matrix
    d = write_tree(tmp_path/'n', {'keep.md': '# Keep\n\nalpha words here\n', **{f'n{i}.md': f'# N{i}\n\nnote{i} words\n' for i in range(6)}})
    home, em = str(tmp_path/'home'), HashEmbedder()
    reader = Store(env={'QMD_NB_HOME': home}); add_collection(reader, d, name='n'); V.embed(reader, em, progress=False)
    first = VectorStore(reader, em.fingerprint).col.id
    p = subprocess.Popen([sys.executable, '-c', CHURN, home, str(d), '8'], stdout=subprocess.PIPE, text=True, encoding='utf-8')
    searches = 0
    while p.poll() is None or searches < 3:
        assert V.vsearch(reader, em, 'alpha', limit=1)[0].file == 'n/keep.md'; searches += 1
    assert p.wait(timeout=300) == 0
    compacted = [int(x) for x in p.stdout.read().split()]
    assert len(compacted) == 8 and sum(n > 0 for n in compacted) >= 3, compacted # 6 deleted a round, 7 live: every second round
    col = VectorStore(Store(env={'QMD_NB_HOME': home}), em.fingerprint).col
    assert (col.id != first, col.name, dead_vectors(reader, em.fingerprint) < 7) == (True, space_name(em.fingerprint), True)
    vectors = Path(home)/'cache'/'index'/'vectors'
    assert _unlisted_segments(vectors) == [] and len([x for x in vectors.iterdir() if x.is_dir()]) <= 2 # one collection's folder (a new one's may wait)
    assert [r.file for r in V.vsearch(reader, em, 'note3', limit=1)] == ['n/n3.md'] # the long-lived reader sees the newest copy
    fresh = Store(env={'QMD_NB_HOME': home})
    assert sorted(r.file for r in V.vsearch(fresh, em, 'words', limit=10, min_score=0)) == sorted(['n/keep.md', *(f'n/n{i}.md' for i in range(6))])

KILLED = """import sys
from qmd_nb.engine.chroma import VectorStore; from qmd_nb.engine.compact import compact; from qmd_nb.engine.store import Store
from qmd_nb.engine.embed import HashEmbedder
st = Store(env={'QMD_NB_HOME': sys.argv[1]}); compact(VectorStore(st, HashEmbedder(4096).fingerprint), page=25, progress=False)"""

def test_a_killed_compaction_leaves_the_old_collection_and_the_next_embed_completes_it(tmp_path):
    "SIGKILL half-way through the copy: searches still find every page (the catalog names the old collection); the next `embed` compacts and removes the partial copy."
    import os, sys
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.index import add_collection
    from qmd_nb.engine.embed import HashEmbedder
    from qmd_nb.engine.vectors import embed, vsearch
    from qmd_nb.engine.chroma import VectorStore
    from qmd_nb.engine.compact import _unlisted_segments
    d = write_tree(tmp_path/'n', {f'p{i}.md': f'# P{i}\n\npage{i} text\n' for i in range(2000)})
    home, em = str(tmp_path/'home'), HashEmbedder(4096) # few collisions of words
    st = Store(env={'QMD_NB_HOME': home}); add_collection(st, d, name='n', progress=False); embed(st, em, progress=False)
    with st.tx() as db: db.execute("INSERT OR REPLACE INTO kv VALUES(?, '5000')", (f'vectors-dead:{em.fingerprint}',)) # churn's count
    space, vectors = VectorStore(st, em.fingerprint).col.name, Path(home)/'cache'/'index'/'vectors'
    spaces = lambda: sqlite3.connect(f'file:{vectors/"chroma.sqlite3"}?mode=ro', uri=True).execute('SELECT COUNT(*) FROM collections').fetchone()[0]
    copied = lambda: sqlite3.connect(f'file:{vectors/"chroma.sqlite3"}?mode=ro', uri=True).execute(
        'SELECT COUNT(*) FROM embeddings e JOIN segments s ON e.segment_id = s.id JOIN collections c ON s.collection = c.id WHERE c.name != ?', (space,)).fetchone()[0]
    p = subprocess.Popen([sys.executable, '-c', KILLED, home])
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None:
        try:
            if spaces() == 2 and copied() >= 100: break
        except sqlite3.OperationalError: pass
        time.sleep(0.02)
    assert p.poll() is None, 'the compaction ended before it could be killed'
    p.send_signal(signal.SIGKILL); p.wait()
    fresh = Store(env={'QMD_NB_HOME': home})
    old_id = VectorStore(fresh, em.fingerprint).col.id
    assert spaces() == 2 # the old collection serves; the partial copy waits
    assert len(VectorStore(fresh, em.fingerprint).everything()[0]) == 2000
    assert 'n/p1234.md' in [r.file for r in vsearch(fresh, em, 'page1234', limit=5)]
    s = embed(fresh, em, progress=False) # nothing new to embed, but a compaction due
    assert (s.documents, s.compacted, VectorStore(fresh, em.fingerprint).col.id != old_id) == (0, 2000, True)
    assert spaces() == 1 and _unlisted_segments(vectors) == []
    after = Store(env={'QMD_NB_HOME': home})
    assert len(VectorStore(after, em.fingerprint).everything()[0]) == 2000 and 'n/p77.md' in [r.file for r in vsearch(after, em, 'page77', limit=5)]
