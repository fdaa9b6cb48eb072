"The read pool (qmd_nb.engine.readpool) through the real command line: a pooled first index writes exactly what the serial one writes, and Ctrl-C or kill -9 during one leaves no worker behind and an index the next run completes."
import os, random, shutil, signal, sqlite3, subprocess, sys, time
from pathlib import Path
import pytest
from conftest import DATA, QMD_BIN, Qmd, write_tree

QUERIES = ['compress files', 'list directory contents', 'git commit changes', 'kill process by name', '"create an archive"',
           'show disk usage -docker', 'download a file from a url', 'search for a pattern', 'café', 'backups rsync']

def _corpus(root:Path, n:int) -> Path:
    "n tldr pages (a fixed sample) and the odd files an update meets: front matter, not UTF-8, HTML to convert, a link out."
    src = sorted((DATA/'tldr-pages'/'common').glob('*.md'))
    root.mkdir(parents=True)
    for p in random.Random(3).sample(src, n): (root/p.name).write_bytes(p.read_bytes())
    write_tree(root, {'fm.md': "---\ntitle: Backup strategy\ntags: [ops, storage]\n---\n# Backups\n\nUse rsync every night.\n",
                      'bad.md': b"\xff\xfe\x00 not text", 'page.html': "<html><body><h1>Café</h1><p>Un café crème.</p></body></html>",
                      'dup.md': (root/p.name).read_text(encoding='utf-8')}) # the same content twice
    (root.parent/'outside.md').write_text('# secret\n', encoding='utf-8'); os.symlink(root.parent/'outside.md', root/'link-out.md')
    for f in root.iterdir(): os.utime(f, (time.time() - 60,) * 2, follow_symlinks=False) # not racy for either index (see `racy`)
    return root

def _catalog(home:Path) -> list:
    "Every catalog row but the times of day (documents' indexed_at, kv's scan start, collection_state)."
    db = sqlite3.connect(home/'cache'/'index'/'catalog.sqlite')
    try:
        rows = [db.execute(f"SELECT {cols} FROM {t} ORDER BY 1, 2").fetchall() for t, cols in
                [('documents', 'id, collection, path, hash, title, size, mtime, meta, inode, mtime_ns'), ('content', 'hash, body, terms, body_start'),
                 ('doc_log', 'seq, doc_id'), ('problems', 'collection, path, reason'), ('conversions', 'hash, version, meta, error')]]
        return rows + [db.execute("SELECT key, value FROM kv WHERE key NOT LIKE 'scan_ns:%' AND key != 'listing_token' ORDER BY key").fetchall()]
    finally: db.close()

def _keyword_files(home:Path) -> dict:
    kw = home/'cache'/'index'/'keyword'
    return {str(p.relative_to(kw)): p.read_bytes() for p in sorted(kw.rglob('*')) if p.is_file()}

def test_pooled_first_index_equals_serial(tmp_path):
    "Two workers and none build the same catalog (rows, ids, log), the same keyword index files and the same scores; the output is the same."
    root = _corpus(tmp_path/'pages', 700)
    serial, pooled = Qmd(tmp_path/'serial'), Qmd(tmp_path/'pooled')
    a, b = serial('collection', 'add', root, '--name', 'p', '--workers', '1'), pooled('collection', 'add', root, '--name', 'p', '--workers', '2')
    assert (a.stdout, a.stderr) == (b.stdout, b.stderr) and 'Traceback' not in b.stderr
    assert 'p: 703 indexed, 0 updated, 0 unchanged, 0 removed, 1 skipped' in b.stdout and 'skipped bad.md: not UTF-8' in b.stderr, (b.stdout, b.stderr)
    assert _catalog(serial.home) == _catalog(pooled.home)
    assert _keyword_files(serial.home) == _keyword_files(pooled.home)
    for q in QUERIES: assert serial('search', q, '--json', '-n', '10').stdout == pooled('search', q, '--json', '-n', '10').stdout, q
    # an update after changes, read by the pool too (more than POOL_MIN changed files), stays level with the serial one
    for p in [p for p in sorted(root.glob('*.md')) if p.name != 'bad.md'][:600]: p.write_text(p.read_text(encoding='utf-8') + '\nEdited: compress the files.\n', encoding='utf-8')
    a, b = serial('update', '--workers', '1'), pooled('update')
    assert (a.stdout, a.stderr) == (b.stdout, b.stderr)
    assert _catalog(serial.home) == _catalog(pooled.home) and _keyword_files(serial.home) == _keyword_files(pooled.home)

def test_bad_workers_setting_is_named(tmp_path):
    q = Qmd(tmp_path/'home'); q.env['QMD_NB_INDEX_WORKERS'] = 'many'
    r = q('collection', 'add', write_tree(tmp_path/'n', {'a.md': '# A\n'}), ok=False)
    assert r.returncode == 1 and r.stderr.strip() == "Error: index_workers must be a whole number of processes, 1 or more (1: no pool), not 'many'"

def _children(pid:int) -> list[int]:
    try: return [int(x) for x in Path(f'/proc/{pid}/task/{pid}/children').read_text(encoding='utf-8').split()]
    except OSError: return []

def _alive(pid:int) -> bool:
    try: return Path(f'/proc/{pid}/stat').read_text(encoding='utf-8', errors='replace').split(') ')[1][0] not in 'ZX'
    except OSError: return False

def _started(q:Qmd, root:Path, *args) -> tuple[subprocess.Popen, list[int]]:
    "A `collection add` with its two read workers running (its children other than multiprocessing's resource tracker)."
    # Ctrl-C as a terminal's foreground job gets it: a test run started in the background (`cmd &` without job control)
    # passes SIGINT on ignored, and an ignored SIGINT stays ignored in Python, so the index would finish (exit 0)
    p = subprocess.Popen([QMD_BIN, 'collection', 'add', str(root), '--name', 'p', '--workers', '2', *args], env=q.env, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8')
    end = time.time() + 120
    while time.time() < end and p.poll() is None:
        kids = [k for k in _children(p.pid) if 'spawn_main' in Path(f'/proc/{k}/cmdline').read_text(encoding='utf-8', errors='replace')]
        if len(kids) == 2: time.sleep(0.5); return p, kids
        time.sleep(0.02)
    pytest.fail(f'no read workers seen (exit {p.poll()})')

def _gone(pids:list[int], secs:float=10) -> bool:
    end = time.time() + secs
    while time.time() < end and any(map(_alive, pids)): time.sleep(0.05)
    return not any(map(_alive, pids))

@pytest.mark.skipif(not (DATA/'tldr-pages').is_dir(), reason='needs ../shared/data')
def test_interrupted_pooled_index_leaves_no_worker(tmp_path):
    "Ctrl-C (to the whole process group, as a terminal sends it), SIGTERM and kill -9 (to the parent alone) during a pooled first index."
    root = tmp_path/'pages' # four copies of tldr-pages (~30k files): one alone is indexed in ~1 s, which a signal sent 0.5 s after
    for i in range(4): shutil.copytree(DATA/'tldr-pages', root/f'copy{i}') # the workers start could miss (the index done, exit 0)
    n = sum(p.is_file() for p in root.rglob('*')) # all markdown, none hidden
    q = Qmd(tmp_path/'home')
    p, kids = _started(q, root)
    os.killpg(p.pid, signal.SIGINT); out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and err == "\nInterrupted. The index is consistent; run the command again to finish.\n" and out == '', (p.returncode, err)
    assert _gone(kids) and 'has no collections yet' in q('collection', 'list').stdout # all or nothing: nothing
    p, kids = _started(q, root)
    p.terminate(); p.communicate(timeout=60) # SIGTERM to the parent alone
    assert _gone(kids)
    p, kids = _started(q, root)
    p.kill(); p.communicate(timeout=60)
    assert _gone(kids) # the workers die with their parent (no orphan keeps reading)
    r = q('collection', 'add', root, '--name', 'p') # what the user does next
    assert 'Traceback' not in r.stderr
    db = sqlite3.connect(q.home/'cache'/'index'/'catalog.sqlite')
    assert db.execute('PRAGMA integrity_check').fetchone()[0] == 'ok'
    assert db.execute('SELECT COUNT(*) FROM documents').fetchone()[0] + len(q.json('status', '--json')['problems']) == n

def test_stdio_mcp_catch_up_through_the_pool(tmp_path):
    "qmd-nb mcp --watch catches up 700 files written while nobody watched through the pool, in the watcher's thread: the protocol stays whole."
    import asyncio
    root = write_tree(tmp_path/'notes', {'a.md': '# Alpha\n\nfirst\n'})
    q = Qmd(tmp_path/'home'); q('collection', 'add', root, '--name', 'notes')
    for i, p in enumerate(sorted((DATA/'tldr-pages'/'common').glob('*.md'))[:700]): (root/p.name).write_bytes(p.read_bytes())
    async def run():
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters
        async with Client(StdioServerParameters(command=QMD_BIN, args=['mcp', '--watch'], env=q.env)) as c:
            for _ in range(600):
                res = (await c.call_tool('search', {'query': 'compress files', 'limit': 3})).structured_content['results']
                if res: return res, (await c.call_tool('status', {})).structured_content
                await asyncio.sleep(0.1)
    res, status = asyncio.run(run())
    assert res and status['totalDocuments'] == 701 and status['freshness']['error'] is None, status

def test_unguarded_script_runs_once(tmp_path):
    "A script that indexes at its top level, with no `if __name__ == '__main__':` guard, is not run again by the pool's workers."
    root, log, home = _corpus(tmp_path/'pages', 600), tmp_path/'ran.log', tmp_path/'home'
    script = tmp_path/'index_notes.py'
    script.write_text(f"""import os
from qmd_nb.engine.store import Store
from qmd_nb.engine.index import add_collection
with open({str(log)!r}, 'a') as f: f.write(f'{{os.getpid()}}\\n') # a side effect before the call: once, in this process
st = Store(env={{'QMD_NB_HOME': {str(home)!r}}})
print(add_collection(st, {str(root)!r}, name='p', workers=2, progress=False).indexed)
""", encoding='utf-8')
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, encoding='utf-8', timeout=300, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == '603', (r.stdout, r.stderr[-2000:])
    assert len(log.read_text(encoding='utf-8').split()) == 1, log.read_text(encoding='utf-8') # the workers did not run it again

def test_unguarded_script_runs_once_when_converting(tmp_path):
    "The same for the conversion pool (8 or more PDF, Word or HTML files at once): its workers skip the script too, and leave no traceback."
    root, log, home = tmp_path/'pages', tmp_path/'ran.log', tmp_path/'home'
    root.mkdir()
    for i in range(8): (root/f'p{i}.html').write_text(f'<html><body><h1>Page {i}</h1><p>kiwis {i}</p></body></html>', encoding='utf-8')
    script = tmp_path/'convert_pages.py'
    script.write_text(f"""import os
from qmd_nb.engine.store import Store
from qmd_nb.engine.index import add_collection
with open({str(log)!r}, 'a') as f: f.write(f'{{os.getpid()}}\\n')
print(add_collection(Store(env={{'QMD_NB_HOME': {str(home)!r}}}), {str(root)!r}, name='p', progress=False).indexed)
""", encoding='utf-8')
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, encoding='utf-8', timeout=120, cwd=tmp_path) # before: the workers ran it again, forever
    assert r.returncode == 0 and r.stdout.strip() == '8' and 'Traceback' not in r.stderr, (r.stdout, r.stderr[-2000:])
    assert len(log.read_text(encoding='utf-8').split()) == 1, log.read_text(encoding='utf-8')
