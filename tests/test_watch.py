"Watching: real folders, the real inotify watcher, `qmd-nb watch` and `serve --watch` as processes, MCP clients told of changes."
import asyncio, os, signal, subprocess, sys, time
import pytest
from pathlib import Path
import httpx
from conftest import QMD_BIN, write_tree
from test_rest import Server

def until(cond, timeout=30, every=0.1):
    "Poll `cond` until it returns something true; that value (fails after `timeout` s)."
    t = time.time()
    while time.time() - t < timeout:
        if v := cond(): return v
        time.sleep(every)
    raise AssertionError(f"not true within {timeout} s")

def found(qmd, q): return [r['file'] for r in qmd.json('search', q, '--format', 'json')]

def test_watch_command(qmd, tmp_path):
    root = write_tree(tmp_path/'notes', {'a.md': '# Alpha\n\nfirst note\n', 'cooking/pasta.md': '# Pasta\n\nspaghetti tonight\n'})
    qmd('collection', 'add', root, '--name', 'notes')
    (root/'late.md').write_text('# Late\n\nwritten while nobody watched\n', encoding='utf-8') # caught up when the watcher starts
    p = subprocess.Popen([QMD_BIN, 'watch'], env=qmd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8')
    try:
        assert p.stderr.readline().startswith('Watching notes')
        assert found(qmd, 'nobody watched') == ['notes/late.md']
        (root/'b.md').write_text('# Bravo\n\nzebras crossing\n', encoding='utf-8')
        until(lambda: found(qmd, 'zebras') == ['notes/b.md'])
        swap = root/'cooking'/'.pasta.md.swp'; swap.write_text('# Pasta\n\npenne tonight\n', encoding='utf-8'); os.replace(swap, root/'cooking'/'pasta.md') # vim's way
        until(lambda: found(qmd, 'penne') == ['notes/cooking/pasta.md'])
        assert found(qmd, 'spaghetti') == []
        outside = write_tree(tmp_path/'drafts', {'deep/c.md': '# Charlie\n\nyaks grazing\n'})
        os.rename(outside, root/'drafts') # a folder moved in: one event, its files found by walking it
        until(lambda: found(qmd, 'yaks') == ['notes/drafts/deep/c.md'])
        os.rename(root/'drafts'/'deep'/'c.md', root/'c2.md') # renamed: same document
        until(lambda: found(qmd, 'yaks') == ['notes/c2.md'])
        (root/'b.md').unlink()
        until(lambda: found(qmd, 'zebras') == [])
    finally:
        p.send_signal(signal.SIGTERM); out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert 'notes: 1 indexed, 0 updated' in out and ', 1 renamed' in out and 'Stopped watching.' in err

def test_serve_watch_keyword_vectors_and_mcp(qmd, tmp_path):
    "serve --watch: a saved file reaches the keyword index and, with vectors, the vector index; MCP clients hear of it."
    qmd.env['QMD_NB_EMBED_MODEL'] = 'hash' # a deterministic embedder: the test is about freshness, not the model
    root = write_tree(tmp_path/'notes', {'a.md': '# Alpha\n\nfirst note about llamas\n'})
    qmd('collection', 'add', root, '--name', 'notes'); qmd('embed')
    s = Server(qmd, '--watch')
    try:
        async def run():
            from mcp import Client
            heard = []
            async def on_message(m): heard.append(getattr(getattr(m, 'root', m), 'method', None))
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client
            http = lambda: streamable_http_client(s.url + '/mcp', http_client=create_mcp_http_client(headers={'Authorization': f'Bearer {s.token}'}))
            async with Client(http(), mode='legacy', message_handler=on_message) as legacy, Client(http()) as modern:
                assert legacy.server_capabilities.resources.list_changed
                await legacy.list_tools()
                async with modern.listen(resources_list_changed=True) as sub:
                    (root/'b.md').write_text('# Bravo\n\nquokkas in the garden\n', encoding='utf-8')
                    t = time.time()
                    with_kw = await asyncio.to_thread(until, lambda: s.post('/search', {'query': 'quokkas'}).json()['results'])
                    kw_s = time.time() - t
                    try: with_vec = await asyncio.to_thread(until, lambda: [r for r in s.post('/vsearch', {'query': 'quokkas in the garden', 'min_score': 0.5}).json().get('results', [])
                                                                             if r['file'] == 'notes/b.md'])
                    except AssertionError: raise AssertionError(s.get('/status').json(), s.post('/vsearch', {'query': 'quokkas in the garden'}).json())
                    vec_s = time.time() - t
                    event = await asyncio.wait_for(sub.__anext__(), 10)
                for _ in range(100):
                    if 'notifications/resources/list_changed' in heard: break
                    await asyncio.sleep(0.05)
                status = (await legacy.call_tool('status', {})).structured_content
            return with_kw, with_vec, kw_s, vec_s, type(event).__name__, heard, status
        with_kw, with_vec, kw_s, vec_s, event, heard, status = asyncio.run(run())
        assert with_kw[0]['file'] == 'notes/b.md' and with_vec[0]['file'] == 'notes/b.md'
        assert kw_s < 10 and vec_s < 20, (kw_s, vec_s) # loose: the machine is shared; bench/bench_scale.py measures
        assert event == 'ResourcesListChanged' and 'notifications/resources/list_changed' in heard
        f = status['freshness']
        assert f['watching'] and f['collections'] == ['notes'] and f['vectors'] == 'current' and f['error'] is None, f
        rest = s.get('/status').json()
        assert rest['freshness']['batches'] >= 2 and 'Watching: 1 collection' in rest['content']
    finally:
        code, out, err = s.stop()
    assert code == 0 and out == '', (code, out, err)

def test_stdio_mcp_watch(qmd, tmp_path):
    "qmd-nb mcp --watch: the stdio client of a handshake revision is told when a saved file changed the index."
    root = write_tree(tmp_path/'notes', {'a.md': '# Alpha\n\nfirst\n'})
    qmd('collection', 'add', root, '--name', 'notes')
    async def run():
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters
        heard = []
        async def on_message(m): heard.append(getattr(getattr(m, 'root', m), 'method', None))
        params = StdioServerParameters(command=QMD_BIN, args=['mcp', '--watch'], env=qmd.env)
        async with Client(params, mode='legacy', message_handler=on_message) as c:
            await c.list_tools()
            await asyncio.sleep(1.5) # the watcher arms after the server is built
            (root/'b.md').write_text('# Bravo\n\nwombats\n', encoding='utf-8')
            for _ in range(300):
                if 'notifications/resources/list_changed' in heard: break
                await asyncio.sleep(0.05)
            return heard, (await c.call_tool('search', {'query': 'wombats'})).structured_content['results']
    heard, res = asyncio.run(run())
    assert 'notifications/resources/list_changed' in heard and res[0]['file'] == 'notes/b.md'

def test_incremental_equals_fresh(tmp_path):
    """Any sequence of saves, renames, deletions and folder moves, brought in by `update_paths` and `update`, leaves the
    catalog and the keyword ranking a fresh index of the same folder would have (real files from tldr-pages)."""
    import random, shutil
    from conftest import DATA
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.index import add_collection, update, update_paths
    from qmd_nb.engine.search import search
    src = sorted((DATA/'tldr-pages'/'common').glob('*.md'))[:300]
    root = tmp_path/'notes'; root.mkdir()
    for p in src[:200]: shutil.copy(p, root/p.name)
    st = Store(env={'QMD_NB_HOME': str(tmp_path/'inc')}); add_collection(st, root, name='n', progress=False)
    rnd, spare = random.Random(15), list(src[200:])
    for step in range(40):
        files = sorted(root.rglob('*.md')); f = rnd.choice(files); op = rnd.choice(['edit', 'new', 'rename', 'delete', 'move', 'touch'])
        changed = [f]
        if op == 'edit': f.write_text(f.read_text(encoding='utf-8') + f'\n- edited in step {step}\n', encoding='utf-8')
        elif op == 'new': g = spare.pop(); shutil.copy(g, root/g.name); changed = [root/g.name]
        elif op == 'rename': g = f.with_name(f'renamed-{step}.md'); os.rename(f, g); changed = [f, g]
        elif op == 'delete': f.unlink()
        elif op == 'move': d = root/f'folder{step % 3}'; d.mkdir(exist_ok=True); os.rename(f, d/f.name); changed = [f, d]
        else: os.utime(f)
        if step % 10 == 9: update(st) # now and then a full update, as a user would run
        else: update_paths(st, 'n', [str(p) for p in changed])
    fresh = Store(env={'QMD_NB_HOME': str(tmp_path/'fresh')}); add_collection(fresh, root, name='n', progress=False)
    cat = lambda s: sorted(s.q("SELECT d.path, d.hash, d.title, c.terms FROM documents d JOIN content c ON c.hash = d.hash"))
    assert cat(st) == cat(fresh) and len(cat(st)) > 150
    assert st.q("SELECT COUNT(*) FROM content")[0][0] == fresh.q("SELECT COUNT(*) FROM content")[0][0] # no orphans left
    for q in ('archive files', 'list directory contents', 'network interface', 'git commit', 'compress'):
        assert [(r.file, round(r.score, 6)) for r in search(st, q, 10)] == [(r.file, round(r.score, 6)) for r in search(fresh, q, 10)], q

def test_storm_with_lost_events_is_caught_up(qmd, tmp_path):
    "The kernel drops inotify events when its queue overflows (made short here: 64); once the storm is over the watcher checks the collection whole."
    queue = Path('/proc/sys/fs/inotify/max_queued_events'); old = queue.read_text(encoding='ascii')
    root = write_tree(tmp_path/'notes', {'a.md': '# Alpha\n\nfirst note\n'})
    qmd('collection', 'add', root, '--name', 'notes')
    queue.write_text('64\n', encoding='ascii')
    try: # an inotify instance keeps the queue length it was made with
        p = subprocess.Popen([QMD_BIN, 'watch'], env=qmd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8')
        assert p.stderr.readline().startswith('Watching notes')
    finally: queue.write_text(old, encoding='ascii')
    try:
        for i in range(1500): (root/f'n{i}.md').write_text(f'# Note {i}\n\nstormword{i}\n', encoding='utf-8')
        until(lambda: qmd.json('status', '--json')['total_documents'] == 1501, timeout=60)
        assert found(qmd, 'stormword1499') == ['notes/n1499.md']
    finally:
        p.send_signal(signal.SIGTERM); p.communicate(timeout=30)
    assert 'notes: 0 indexed, 0 updated' in qmd('update').stdout # nothing left for a full update

NO_DAC = ['setpriv', '--bounding-set', '-dac_override,-dac_read_search', '--inh-caps', '-dac_override,-dac_read_search'] # root that obeys file modes

def test_unreadable_folder_and_broken_config_keep_the_watcher_going(qmd, tmp_path):
    "A folder inside that cannot be read stops watchfiles arming any watch: the watcher rescans instead; a config file broken mid-run is waited out."
    root = write_tree(tmp_path/'notes', {'open/a.md': '# Alpha\n\nfirst note\n', 'locked/b.md': '# Bravo\n\nlocked note\n'})
    qmd('collection', 'add', root, '--name', 'notes')
    (root/'locked').chmod(0)
    p = subprocess.Popen(NO_DAC + [QMD_BIN, 'watch'], env=qmd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8')
    try:
        (root/'open'/'late.md').write_text('# Late\n\nwombats arrive\n', encoding='utf-8')
        until(lambda: found(qmd, 'wombats') == ['notes/open/late.md'], timeout=30) # by the rescans (was: never, while locked/ stayed locked)
        cfg = Path(qmd.env['QMD_NB_HOME'])/'config'/'index.json'; good = cfg.read_text(encoding='utf-8')
        cfg.write_text('{"collections": ', encoding='utf-8'); time.sleep(3) # a hand edit half done
        assert p.poll() is None # the watcher waits for a config it can read (it used to stop)
        cfg.write_text(good, encoding='utf-8'); (root/'locked').chmod(0o755)
        (root/'open'/'later.md').write_text('# Later\n\nyaks graze\n', encoding='utf-8')
        until(lambda: found(qmd, 'yaks') == ['notes/open/later.md'], timeout=30)
    finally:
        (root/'locked').chmod(0o755); p.send_signal(signal.SIGTERM); out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err

def test_collection_folder_unmounted_and_mounted_again(qmd, tmp_path, mounts):
    "A collection on a drive: when it is unmounted (or mounted again) the watches see nothing there, so the watcher re-arms and catches up."
    root = tmp_path/'drive'; root.mkdir()
    if subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', str(root)], capture_output=True).returncode: pytest.skip('cannot mount tmpfs here')
    mounts.append(root)
    write_tree(root, {'a.md': '# Alpha\n\nfirst note\n'})
    qmd('collection', 'add', root, '--name', 'drive')
    p = subprocess.Popen([QMD_BIN, 'watch'], env=qmd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8')
    try:
        assert p.stderr.readline().startswith('Watching drive')
        subprocess.run(['umount', str(root)], check=True); mounts.remove(root)
        (root/'bare.md').write_text('# Bare\n\nwombats under the mount\n', encoding='utf-8') # the folder under the drive
        until(lambda: found(qmd, 'wombats') == ['drive/bare.md'], timeout=30) # was: never (the watch was on the unmounted drive)
        assert found(qmd, 'first note') == []
        subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', str(root)], check=True); mounts.append(root)
        (root/'back.md').write_text('# Back\n\nyaks on the drive\n', encoding='utf-8')
        until(lambda: found(qmd, 'yaks') == ['drive/back.md'], timeout=30)
    finally:
        p.send_signal(signal.SIGTERM); p.communicate(timeout=30)

def test_folder_made_unreadable_while_watching_keeps_its_documents(qmd, tmp_path):
    "A folder made unreadable while watching: its documents are kept and the problem recorded, as `update` does (the watcher removed them)."
    root = write_tree(tmp_path/'notes', {'open/a.md': '# Alpha\n\nfirst note\n', 'locked/b.md': '# Bravo\n\nlocked llamas\n'})
    qmd('collection', 'add', root, '--name', 'notes')
    p = subprocess.Popen(NO_DAC + [QMD_BIN, 'watch'], env=qmd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8')
    try:
        assert p.stderr.readline().startswith('Watching notes')
        (root/'locked').chmod(0)
        (root/'open'/'late.md').write_text('# Late\n\nwombats arrive\n', encoding='utf-8') # in the chmod's batch or a later one
        until(lambda: found(qmd, 'wombats') == ['notes/open/late.md'])
        assert found(qmd, 'llamas') == ['notes/locked/b.md'] # kept (was: removed)
        assert [f['file'] for f in qmd.json('status', '--json')['failures']] == ['notes/locked/'] # and said
        (root/'locked').chmod(0o755)
        until(lambda: qmd.json('status', '--json')['failures'] == []) # readable again: the problem is cleared
        assert found(qmd, 'llamas') == ['notes/locked/b.md']
    finally:
        (root/'locked').chmod(0o755); p.send_signal(signal.SIGTERM); p.communicate(timeout=30)
    (root/'locked').chmod(0)
    try: out = subprocess.run(NO_DAC + [QMD_BIN, 'update'], env=qmd.env, capture_output=True, text=True, encoding='utf-8', check=True).stdout
    finally: (root/'locked').chmod(0o755)
    assert 'notes: 0 indexed, 0 updated, 2 unchanged, 0 removed' in out # update agrees: nothing to change

def test_vanished_collection_folder_is_said_in_status(qmd, tmp_path):
    "A watched collection's folder renamed away: the status says its folder is missing (it was silently dropped), and no longer once it is back."
    root = write_tree(tmp_path/'notes', {'a.md': '# Alpha\n\nfirst note\n'})
    other = write_tree(tmp_path/'other', {'b.md': '# Bravo\n\nsecond\n'})
    qmd('collection', 'add', root, '--name', 'notes'); qmd('collection', 'add', other, '--name', 'other')
    s = Server(qmd, '--watch')
    try:
        until(lambda: s.get('/status').json()['freshness']['collections'] == ['notes', 'other'])
        os.rename(other, tmp_path/'away')
        f = until(lambda: (f := s.get('/status').json()['freshness'])['collections'] == ['notes'] and f)
        assert f['missing'] == {'other': str(other)} and f['summary'].endswith(f'; folder missing: {other}'), f
        os.rename(tmp_path/'away', other)
        f = until(lambda: (f := s.get('/status').json()['freshness'])['collections'] == ['notes', 'other'] and f)
        assert f['missing'] == {} and 'missing' not in f['summary'], f
    finally: s.stop()

def test_mount_on_a_subfolder_while_watching(qmd, tmp_path, mounts):
    "A drive mounted on a folder inside a collection hides its files and brings others: the watcher re-arms and catches up (it saw neither), and again at unmount."
    root = write_tree(tmp_path/'notes', {'a.md': '# Alpha\n\nfirst note\n', 'sub/b.md': '# Bravo\n\nhidden llamas\n'})
    qmd('collection', 'add', root, '--name', 'notes')
    p = subprocess.Popen([QMD_BIN, 'watch'], env=qmd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8')
    try:
        assert p.stderr.readline().startswith('Watching notes')
        if subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', str(root/'sub')], capture_output=True).returncode: pytest.skip('cannot mount tmpfs here')
        mounts.append(root/'sub')
        until(lambda: found(qmd, 'llamas') == [], timeout=15) # hidden by the mount (was: kept)
        (root/'sub'/'m.md').write_text('# Mike\n\nwombats on the drive\n', encoding='utf-8')
        until(lambda: found(qmd, 'wombats') == ['notes/sub/m.md'], timeout=15) # was: never
        subprocess.run(['umount', str(root/'sub')], check=True); mounts.remove(root/'sub')
        until(lambda: found(qmd, 'llamas') == ['notes/sub/b.md'] and found(qmd, 'wombats') == [], timeout=15)
    finally:
        p.send_signal(signal.SIGTERM); p.communicate(timeout=30)
    assert 'notes: 0 indexed, 0 updated' in qmd('update').stdout

def test_linked_folder_inside_the_collection(qmd, tmp_path):
    "A link to a folder inside the collection: `update` indexes its files once, under one of their two paths; the watcher reaches the same documents (it indexed the edited file again under its other path, leaving the first stale)."
    root = write_tree(tmp_path/'notes', {'real/f.md': '# Foxtrot\n\nfirst words\n', 't.md': '# Tango\n\ntop\n'})
    os.symlink('real', root/'alias')
    qmd('collection', 'add', root, '--name', 'notes')
    docs = lambda: sorted(r['file'] for r in qmd.json('search', 'foxtrot OR golf', '--format', 'json'))
    first = docs(); assert len(first) == 1 # one document for the file
    p = subprocess.Popen([QMD_BIN, 'watch'], env=qmd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8')
    try:
        assert p.stderr.readline().startswith('Watching notes')
        (root/'real'/'f.md').write_text('# Foxtrot\n\nedited words\n', encoding='utf-8'); (root/'real'/'g.md').write_text('# Golf\n\nnew\n', encoding='utf-8')
        until(lambda: found(qmd, 'edited') == first and len(docs()) == 2)
        time.sleep(1); assert found(qmd, 'edited') == first and found(qmd, '"first words"') == [] and len(docs()) == 2, docs()
        os.symlink('real', root/'zlink') # a second link, made while watching
        (root/'real'/'g.md').write_text('# Golf\n\nchanged again\n', encoding='utf-8')
        until(lambda: len(found(qmd, '"changed again"')) == 1); time.sleep(1); assert len(docs()) == 2, docs()
    finally:
        p.send_signal(signal.SIGTERM); p.communicate(timeout=30)
    out = qmd('update').stdout
    assert 'notes: 0 indexed, 0 updated' in out and ' 0 removed' in out, out

def test_update_keeps_documents_of_folders_it_cannot_read(qmd, tmp_path):
    "`update`, as the watcher: a folder inside, or the collection's own folder, that cannot be opened keeps its documents (they were removed) and is named."
    root = write_tree(tmp_path/'notes', {'a.md': '# Alpha\n\nfirst note\n', 'locked/b.md': '# Bravo\n\nlocked llamas\n'})
    qmd('collection', 'add', root, '--name', 'notes')
    def update_in(folder):
        folder.chmod(0)
        try: r = subprocess.run(NO_DAC + [QMD_BIN, 'update'], env=qmd.env, capture_output=True, text=True, encoding='utf-8')
        finally: folder.chmod(0o755)
        return r.stdout + r.stderr
    out = update_in(root/'locked')
    assert '0 removed, 1 skipped' in out and 'locked/: folder not read (Permission denied)' in out, out
    out = update_in(root)
    assert 'folder cannot be read (Permission denied)' in out and 'its documents are kept' in out, out
    assert found(qmd, 'llamas') == ['notes/locked/b.md'] and found(qmd, 'first') == ['notes/a.md']

def test_a_failed_batch_is_tried_again(qmd, tmp_path, mounts):
    "A save the watcher cannot index (the index's disk is full) is its error until there is room again, then indexed without another save."
    from conftest import Qmd, mount
    mnt = tmp_path/'mnt'; mnt.mkdir()
    if not mount('-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mnt): pytest.skip('needs root to mount a small tmpfs')
    mounts.append(mnt)
    q = Qmd(mnt/'home'); root = write_tree(tmp_path/'notes', {'a.md': '# Alpha\n\nfirst note\n'})
    q('collection', 'add', root, '--name', 'notes')
    s = Server(q, '--watch')
    try:
        until(lambda: s.get('/status').json()['freshness']['collections'] == ['notes'])
        filler = mnt/'filler'
        with open(filler, 'wb', buffering=0) as f: # the disk full to the last block
            for size in (1 << 16, 512, 1):
                try:
                    while True: f.write(b'\0' * size)
                except OSError: pass
        (root/'b.md').write_text('# Bravo\n\nwombats on a full disk\n', encoding='utf-8')
        err = until(lambda: s.get('/status').json()['freshness']['error'], timeout=30)
        assert 'full' in err, err
        filler.unlink() # room again: the failed batch is tried again by itself
        until(lambda: found(q, 'wombats') == ['notes/b.md'], timeout=30) # was: never, until the next save or a restart
        assert until(lambda: (f := s.get('/status').json()['freshness'])['error'] is None and f, timeout=10)
    finally: assert s.stop()[0] == 0
