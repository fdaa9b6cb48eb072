"Interrupted and concurrent work leaves a consistent index; bad files never crash a run."
import os, signal, sqlite3, subprocess, time
from pathlib import Path
from conftest import write_tree, QMD_BIN

def _big_tree(root:Path, n:int) -> Path:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda".split()
    return write_tree(root, {f'd{i // 500}/note{i}.md': f"# Note {i}\n\n" + ' '.join(words[(i + k) % len(words)] for k in range(400)) + f"\nunique{i}\n"
                             for i in range(n)})

def test_killed_update_leaves_consistent_index(qmd, tmp_path):
    root = _big_tree(tmp_path/'big', 6000)
    p = subprocess.Popen([QMD_BIN, 'collection', 'add', str(root), '--name', 'big'], env=qmd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    db = qmd.home/'cache'/'index'/'catalog.sqlite'
    deadline = time.time() + 120
    while time.time() < deadline: # kill once some batches are in, well before the run ends
        if db.exists():
            try:
                n = sqlite3.connect(db).execute("SELECT COUNT(*) FROM documents").fetchone()[0]
                if n >= 500: break
            except sqlite3.OperationalError: pass
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL); p.wait()
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

def test_concurrent_updates_and_searches(qmd, tmp_path):
    root = _big_tree(tmp_path/'c', 800)
    qmd('collection', 'add', root, '--name', 'c')
    for i in range(0, 800, 7): (root/f'd{i // 500}'/f'note{i}.md').write_text(f'# Note {i}\nchanged{i}\n')
    procs = [subprocess.Popen([QMD_BIN, 'update'], env=qmd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    searches = [qmd('search', 'gamma delta', '-n', '3') for _ in range(5)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert all(s.returncode == 0 for s in searches)
    assert 'c: 0 indexed, 0 updated, 800 unchanged' in qmd('update').stdout
    assert qmd('search', 'changed707', '--format', 'files').stdout.strip() == 'c/d1/note707.md'

def test_unreadable_and_odd_files(qmd, tmp_path):
    root = write_tree(tmp_path/'odd', {'ok.md': '# OK\nfine', 'latin1.md': 'caf\xe9'.encode('latin-1'), 'nul.md': b'a\x00b',
                                      'empty.md': '', 'crlf.md': '# Win\r\nline two\r\n', 'bom.md': '\ufeff# Bom\nbody'.encode()})
    (root/'locked.md').write_text('secret'); os.chmod(root/'locked.md', 0)
    r = qmd('collection', 'add', root, '--name', 'odd')
    skipped = 3 if os.geteuid() != 0 else 2 # root can read a 0-mode file
    assert f'odd: {7 - skipped} indexed, 0 updated, 0 unchanged, 0 removed, {skipped} skipped' in r.stdout
    assert 'latin1.md: not UTF-8 text' in r.stderr and 'nul.md: binary content' in r.stderr
    assert qmd('get', 'crlf.md').stdout == '# Win\nline two\n' # the text as stored: line ends made \n, nothing added
    assert qmd('get', 'bom.md').stdout.startswith('# Bom')
    assert qmd('search', 'bom', '--format', 'files').stdout.strip() == 'odd/bom.md'
