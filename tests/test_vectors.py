"Vectors and hybrid search end to end: the real model, a real Chroma store, real processes."
import re, signal, sqlite3, subprocess, time
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
