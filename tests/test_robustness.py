"Interrupted and concurrent work leaves a consistent index; bad files never crash a run."
import os, signal, sqlite3, subprocess, time
from pathlib import Path
from conftest import write_tree, QMD_BIN

def _big_tree(root:Path, n:int) -> Path:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda".split()
    return write_tree(root, {f'd{i // 500}/note{i}.md': f"# Note {i}\n\n" + ' '.join(words[(i + k) % len(words)] for k in range(400)) + f"\nunique{i}\n"
                             for i in range(n)})

def _kill_when(p, db, n_docs, timeout=120):
    "SIGKILL `p` once the catalog holds `n_docs` documents (some batches in, well before the run ends)."
    deadline = time.time() + timeout
    while time.time() < deadline and p.poll() is None:
        if db.exists():
            try:
                if sqlite3.connect(db).execute("SELECT COUNT(*) FROM documents").fetchone()[0] >= n_docs: break
            except sqlite3.OperationalError: pass
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL); p.wait()

def test_killed_update_leaves_consistent_index(qmd, tmp_path):
    root = tmp_path/'big'; root.mkdir()
    qmd('collection', 'add', root, '--name', 'big') # empty: the files come next, and `update` indexes them in batches
    _big_tree(root, 6000)
    p = subprocess.Popen([QMD_BIN, 'update'], env=qmd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    db = qmd.home/'cache'/'index'/'catalog.sqlite'
    _kill_when(p, db, 500)
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == 'ok'
    n = con.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    assert 500 <= n < 6000, n
    assert con.execute("SELECT COUNT(*) FROM documents d LEFT JOIN content c ON c.hash = d.hash WHERE c.hash IS NULL").fetchone()[0] == 0
    # the index answers from what it has, then the next update finishes the job without redoing it
    assert qmd('search', 'unique1').returncode == 0
    out = qmd('update').stdout
    assert f'big: {6000 - n} indexed, 0 updated, {n} unchanged, 0 removed, 0 skipped' in out
    assert qmd('search', 'unique5999', '--format', 'files').stdout.strip() == 'big/d11/note5999.md'
    assert 'big: 0 indexed, 0 updated, 6000 unchanged' in qmd('update').stdout

def test_killed_collection_add_leaves_nothing(qmd, tmp_path):
    "A collection add is all or nothing: killed half-way, no collection and no document remain, and adding it again works."
    root = _big_tree(tmp_path/'big', 3000)
    qmd('collection', 'add', write_tree(tmp_path/'small', {'a.md': '# A\nalpha'}), '--name', 'small')
    p = subprocess.Popen([QMD_BIN, 'collection', 'add', str(root), '--name', 'big'], env=qmd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wal, t0 = qmd.home/'cache'/'index'/'catalog.sqlite-wal', time.time()
    while p.poll() is None and time.time() - t0 < 60 and not (wal.exists() and wal.stat().st_size > 2 << 20): time.sleep(0.01)
    assert p.poll() is None, "the add ended before it could be killed"
    p.send_signal(signal.SIGKILL); p.wait() # well into its transaction: megabytes of it written
    st = qmd.json('status', '--json')
    assert (st['total_documents'], [c['name'] for c in st['collections']]) == (1, ['small'])
    assert '3000 indexed' in qmd('collection', 'add', root, '--name', 'big').stdout

def test_concurrent_updates_and_searches(qmd, tmp_path):
    root = _big_tree(tmp_path/'c', 800)
    qmd('collection', 'add', root, '--name', 'c')
    for i in range(0, 800, 7): (root/f'd{i // 500}'/f'note{i}.md').write_text(f'# Note {i}\nchanged{i}\n', encoding='utf-8')
    procs = [subprocess.Popen([QMD_BIN, 'update'], env=qmd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8') for _ in range(3)]
    searches = [qmd('search', 'gamma delta', '-n', '3') for _ in range(5)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert all(s.returncode == 0 for s in searches)
    assert 'c: 0 indexed, 0 updated, 800 unchanged' in qmd('update').stdout
    assert qmd('search', 'changed707', '--format', 'files').stdout.strip() == 'c/d1/note707.md'

def test_unreadable_and_odd_files(qmd, tmp_path):
    root = write_tree(tmp_path/'odd', {'ok.md': '# OK\nfine', 'latin1.md': 'caf\xe9'.encode('latin-1'), 'nul.md': b'a\x00b',
                                      'empty.md': '', 'crlf.md': '# Win\r\nline two\r\n', 'bom.md': '\ufeff# Bom\nbody'.encode()})
    (root/'locked.md').write_text('secret', encoding='utf-8'); os.chmod(root/'locked.md', 0)
    r = qmd('collection', 'add', root, '--name', 'odd')
    skipped = 3 if os.geteuid() != 0 else 2 # root can read a 0-mode file
    assert f'odd: {7 - skipped} indexed, 0 updated, 0 unchanged, 0 removed, {skipped} skipped' in r.stdout
    assert 'latin1.md: not UTF-8 text' in r.stderr and 'nul.md: binary content' in r.stderr
    assert qmd('get', 'crlf.md').stdout == '# Win\nline two\n' # the text as stored: line ends made \n, nothing added
    assert qmd('get', 'bom.md').stdout.startswith('# Bom')
    assert qmd('search', 'bom', '--format', 'files').stdout.strip() == 'odd/bom.md'

def test_a_damaged_catalog_is_named_and_rebuilt_from_the_files(qmd, tmp_path):
    "A catalog cut short (a disk fault, a copy interrupted): every command says so in a sentence naming what to move; doing it, `update` builds it again."
    notes = write_tree(tmp_path/'n', {f'n{i}.md': f'# Note {i}\n\nwombat {i} ' + 'filler words ' * 200 + '\n' for i in range(300)})
    qmd('collection', 'add', notes, '--name', 'n')
    db = qmd.home/'cache'/'index'/'catalog.sqlite'
    os.truncate(db, 20000)
    for cmd in (['search', 'wombat'], ['status'], ['update'], ['get', 'n/n1.md']):
        r = qmd(*cmd, ok=False)
        assert r.returncode == 1 and 'Traceback' not in r.stderr and f"damaged (SQLite: database disk image is malformed)" in r.stderr, (cmd, r.stderr)
        assert f"out of {db.parent} and run 'qmd-nb update'" in r.stderr, r.stderr
    for p in db.parent.glob('catalog.sqlite*'): p.rename(tmp_path/p.name) # as the message says: the catalog, with its -wal and -shm
    assert '300 indexed' in qmd('update').stdout
    assert qmd.json('search', 'wombat', '--json', '-n', '3')[0]['file'].startswith('n/n')
