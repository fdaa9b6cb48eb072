"The qmd-nb command line, end to end, as a real process on a real index."
import csv, io, json, os, time
import xml.etree.ElementTree as ET
from conftest import write_tree
import pytest

def test_collection_lifecycle(qmd, notes):
    r = qmd('collection', 'add', notes, '--name', 'notes')
    assert "Added collection 'notes'" in r.stdout
    assert 'notes: 8 indexed, 0 updated, 0 unchanged, 0 removed, 1 skipped' in r.stdout
    assert 'bad.md: not UTF-8' in r.stderr
    assert 'notes\t8 docs' in qmd('collection', 'list').stdout
    show = qmd('collection', 'show', 'notes').stdout
    assert f'Path: {notes}' in show and 'Documents: 8' in show
    dup = qmd('collection', 'add', notes, '--name', 'notes', ok=False)
    assert dup.returncode == 1 and "already exists" in dup.stderr
    qmd('collection', 'rename', 'notes', 'kb')
    assert qmd('search', 'rsync', '--format', 'files').stdout.splitlines()[0].startswith('kb/')
    assert 'Removed collection' in qmd('collection', 'remove', 'kb').stdout
    assert qmd('search', 'rsync').stdout.strip() == 'No results found for "rsync"'

def test_default_name_and_masks(qmd, tmp_path):
    root = write_tree(tmp_path/'My Docs', {'a.md': '# A\nalpha', 'b.txt': 'beta text', 'c.rst': 'gamma'})
    r = qmd('collection', 'add', root, '--mask', '**/*.md, **/*.txt')
    assert "Added collection 'My-Docs'" in r.stdout and '2 indexed' in r.stdout
    assert qmd('search', 'beta', '--format', 'files').stdout.strip() == 'My-Docs/b.txt'

def test_default_mask_takes_every_kind_and_counts_the_rest(qmd, tmp_path):
    "md, txt, pdf, docx and html (the example files) indexed by default; a picture and a dot-file counted as left out."
    from conftest import ROOT
    files = ROOT/'examples'/'files'
    mixed = write_tree(tmp_path/'mixed', {f.name: f.read_bytes() for f in files.iterdir() if f.suffix != '.py'} | {'photo.png': b'\x89PNG', '.draft.md': '# Draft\n'})
    r = qmd('collection', 'add', mixed, '--name', 'mixed')
    assert 'mixed: 5 indexed, 0 updated, 0 unchanged, 0 removed, 0 skipped, 1 not matched by the mask (1 .png), 1 hidden (dot-files)' in r.stdout
    kinds = {d['file'].rsplit('.', 1)[1] for d in qmd.json('multi-get', 'mixed/*', '--json', '--max-bytes', '100000')['results']}
    assert kinds == {'md', 'txt', 'pdf', 'docx', 'html'}
    stats = qmd.json('update', '--json')[0]
    assert (stats['unchanged'], stats['unmatched'], stats['left_out']) == (5, 1, {'.png': 1, 'hidden': 1})

def test_a_folder_is_indexed_once(qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes')
    for folder, why in ((notes, "is already collection 'notes'"), (notes/'cooking', "is inside collection 'notes'"), (notes.parent, "holds collection 'notes'")):
        r = qmd('collection', 'add', folder, '--name', 'other', ok=False)
        assert r.returncode == 1 and why in r.stderr and '--force' in r.stderr, r.stderr
    assert 'other: 2 indexed' in qmd('collection', 'add', notes/'cooking', '--name', 'other', '--force').stdout

def test_empty_index_says_what_to_run(qmd):
    hint = "Add a folder: qmd-nb collection add PATH --name NAME"
    for args in (['search', 'rsync'], ['vsearch', 'rsync'], ['query', 'rsync'], ['embed'], ['update']):
        r = qmd(*args)
        assert r.returncode == 0 and hint in r.stderr, (args, r.stderr)
    assert hint in qmd('status').stdout and hint in qmd('collection', 'list').stdout
    assert qmd.json('status', '--format', 'json')['hint'].endswith(hint)

def test_update_is_incremental(qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes')
    assert 'notes: 0 indexed, 0 updated, 8 unchanged, 0 removed, 1 skipped' in qmd('update').stdout
    (notes/'cooking'/'pasta.md').write_text('# Pasta\n\nNow with pesto.\n', encoding='utf-8')
    (notes/'tokyo.md').unlink()
    (notes/'new.md').write_text('# New\n\nfresh note\n', encoding='utf-8')
    os.utime(notes/'backup.md', (time.time() + 5, time.time() + 5)) # touched, same bytes
    assert 'notes: 1 indexed, 1 updated, 6 unchanged, 1 removed, 1 skipped' in qmd('index').stdout
    assert qmd('search', 'pesto', '--format', 'files').stdout.strip() == 'notes/cooking/pasta.md'
    assert qmd('search', '東京').stdout.strip() == 'No results found for "東京"'

def test_search_formats(qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes')
    res = qmd.json('search', 'rsync copy', '--format', 'json')
    assert res[0]['file'] == 'notes/backup.md' and res[0]['title'] == 'Backup strategy'
    assert set(res[0]) == {'docid', 'file', 'title', 'score', 'context', 'snippet', 'line'}
    assert res[0]['snippet'].startswith('8: Use rsync to copy files') and res[0]['line'] == 8
    assert 0 < res[0]['score'] <= 1 and res[0]['score'] == round(res[0]['score'], 2)
    rows = list(csv.DictReader(io.StringIO(qmd('search', 'rsync', '--format', 'csv').stdout)))
    assert {r['file'] for r in rows} == {'notes/backup.md', 'notes/journals/2025-05-01.md'}
    xml = ET.fromstring(qmd('search', 'rsync', '--format', 'xml').stdout)
    assert xml.get('query') == 'rsync' and len(xml.findall('result')) == 2
    assert '**Backup strategy**' in qmd('search', 'rsync', '--format', 'md').stdout
    cli = qmd('search', 'rsync copy').stdout
    assert cli.startswith('notes/backup.md:8 #') and '8: Use rsync to copy files' in cli
    for fmt, empty in (('json', '[]'), ('files', ''), ('csv', 'docid,file,title,score,line,context,snippet')):
        r = qmd('search', 'zebra', '--format', fmt)
        assert r.returncode == 0 and r.stdout.strip() == empty

def test_query_syntax_and_filters(qmd, notes, tmp_path):
    qmd('collection', 'add', notes, '--name', 'notes')
    other = write_tree(tmp_path/'other', {f'r{i}.md': f'# rsync {i}\nrsync rsync rsync' for i in range(40)})
    qmd('collection', 'add', other, '--name', 'other')
    files = lambda *a: qmd('search', *a, '--format', 'files').stdout.split()
    assert sorted(files('rsync', '-n', '2', '-c', 'notes')) == ['notes/backup.md', 'notes/journals/2025-05-01.md']
    assert files('"rsync daemon"') == ['notes/journals/2025-05-01.md']
    assert files('rsync -daemon', '-c', 'notes') == ['notes/backup.md']
    assert files('cafe') == ['notes/cooking/café.md']
    assert files('東京') == ['notes/tokyo.md']
    assert len(files('rsync', '-n', '50')) == 42
    assert all(float(r['score']) >= 0.5 for r in qmd.json('search', 'rsync copy', '--min-score', '0.5', '--format', 'json'))
    bad = qmd('search', 'rsync', '-c', 'nope', ok=False)
    assert bad.returncode == 1 and 'Collection not found: nope' in bad.stderr

def test_get_variants(qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes')
    first = lambda *a: qmd('get', *a).stdout.splitlines()[0]
    assert first('notes/backup.md') == '---'
    assert first('backup.md:6') == '# Backups'
    assert first('qmd://notes/cooking/caf%C3%A9.md') == '# Café crème'
    assert first(str(notes/'tokyo.md')) == '# 東京'
    docid = qmd.json('search', 'pasta', '--format', 'json')[0]['docid']
    assert first(docid) == '# Pasta' and first(docid.lstrip('#')) == '# Pasta'
    part = qmd('get', 'journals/2025-05-01.md', '--from', '5', '-l', '3', '--line-numbers')
    assert (part.stdout, part.stderr) == ('5: line 6\n6: line 7\n7: line 8\n', '[... truncated 51 more lines: --from 8 reads on]\n') # stdout: the lines asked for
    nf = qmd('get', 'notes/bakup.md', ok=False)
    assert nf.returncode == 1 and nf.stdout == ''
    assert 'Document not found: notes/bakup.md\n\nDid you mean one of these?\n  - notes/backup.md' in nf.stderr
    trav = qmd('get', '../../etc/passwd', ok=False)
    assert trav.returncode == 1 and 'Document not found' in trav.stderr and 'root:' not in trav.stdout

def test_contexts(qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes')
    qmd('context', 'add', '/', 'Personal knowledge base')
    qmd('context', 'add', notes/'journals', 'Daily journal entries')
    assert 'qmd://notes/journals\tDaily journal entries' in qmd('context', 'list').stdout
    r = qmd.json('search', 'rsync daemon', '--format', 'json')[0]
    assert r['context'] == 'Personal knowledge base\n\nDaily journal entries'
    g = qmd('get', 'journals/2025-05-02.md')
    assert (g.stdout, g.stderr) == ('# May 2\n\nNotes on backups.\n', 'Context: Personal knowledge base / Daily journal entries\n') # stdout: the file
    qmd('context', 'rm', 'qmd://notes/journals')
    assert qmd.json('search', 'rsync daemon', '--format', 'json')[0]['context'] == 'Personal knowledge base'
    assert qmd('context', 'add', 'qmd://missing', 'x', ok=False).returncode == 1

def test_multi_get(qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes')
    out = qmd('multi-get', 'journals/2025-05*.md', '-l', '2').stdout
    assert out.count('==> notes/journals/2025-05-0') == 2 and '[... truncated 56 more lines]' in out
    out = qmd('multi-get', 'notes/big.md, pasta.md, nothing.md').stdout
    assert out.startswith('Errors:\nDocument not found: nothing.md')
    assert '[SKIPPED: notes/big.md - File too large (21KB). Use \'qmd-nb get\' with file="notes/big.md" to retrieve.]' in out
    assert '==> notes/cooking/pasta.md <==' in out
    js = json.loads(qmd('multi-get', 'notes/big.md', '--max-bytes', '100000', '--format', 'json').stdout)
    assert js['results'][0]['file'] == 'notes/big.md' and 'lorem' in js['results'][0]['text']
    none = qmd('multi-get', 'zzz/*.md', ok=False)
    assert none.returncode == 1 and 'No documents matched' in none.stderr

def test_status(qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes')
    out = qmd('status').stdout
    assert 'Documents: 8' in out and 'Needs embedding: 8' in out and 'notes: ' in out
    assert 'Failed (1): not indexed, the rest of each run went on\n  notes/bad.md: not UTF-8' in out
    js = qmd.json('status', '--json')
    assert js['total_documents'] == 8 and js['collections'][0]['documents'] == 8 and js['index_bytes'] > 0
    assert js['collections'][0]['last_updated'].endswith('Z')

def test_usage_errors(qmd, notes):
    for args in (['search'], ['search', 'x', '-n', '0'], ['search', 'x', '--min-score', '2'], ['search', 'x', '--format', 'yaml'],
                 ['get'], ['collection'], ['bogus']):
        r = qmd(*args, ok=False)
        assert r.returncode == 2 and r.stdout == '' and r.stderr, args
    r = qmd('collection', 'add', notes/'missing', ok=False)
    assert r.returncode == 1 and 'Not a folder' in r.stderr
    r = qmd('search', '-- -x', ok=False)
    assert r.returncode == 1 and 'only exclusions' in r.stderr

def test_named_indexes_are_separate(qmd, notes):
    qmd('--index', 'work', 'collection', 'add', notes, '--name', 'notes')
    assert qmd('--index', 'work', 'search', 'pasta', '--format', 'files').stdout.strip() == 'notes/cooking/pasta.md'
    assert "The index 'index' has no collections yet" in qmd('collection', 'list').stdout
    assert (qmd.home/'cache'/'work'/'catalog.sqlite').exists() and (qmd.home/'config'/'work.json').exists()

def test_embed_with_nothing_to_do_is_quick(qmd, notes):
    "A second `embed` finds every document embedded from the catalog alone: it says so, and neither Chroma (2 s to import) nor the model is loaded."
    import subprocess, sys
    qmd('collection', 'add', notes, '--name', 'notes'); qmd('embed')
    code = "import sys; from qmd_nb.parser import main; main(['embed']); print('chromadb' in sys.modules, 'openvino' in sys.modules)"
    r = subprocess.run([sys.executable, '-c', code], env=qmd.env, capture_output=True, text=True, encoding='utf-8', timeout=300)
    assert r.returncode == 0 and r.stdout.splitlines() == ["Nothing to embed: every document has its vectors ('qmd-nb embed --force' embeds them again)", 'False False'], (r.stdout, r.stderr)

def test_embed_skips_the_iri_grammar(qmd, notes):
    "An `embed` with work to do imports Chroma without rfc3987-syntax's IRI grammar, as searches do (jsonschema builds it at import: 1.3-3.7 s that nothing here uses)."
    import subprocess, sys
    from importlib.metadata import PackageNotFoundError, version
    try: version('rfc3987-syntax') # installed (JupyterLab brings it); not imported here: an earlier test's Chroma import stubs it out
    except PackageNotFoundError: pytest.skip('rfc3987-syntax is not installed: there is no grammar to skip')
    qmd('collection', 'add', notes, '--name', 'notes')
    code = "import sys; from qmd_nb.parser import main; main(['embed']); print('chromadb' in sys.modules, sys.modules.get('rfc3987_syntax') is None)"
    r = subprocess.run([sys.executable, '-c', code], env=qmd.env, capture_output=True, text=True, encoding='utf-8', timeout=300)
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == 'True True', (r.stdout, r.stderr)

def test_embed_after_an_edit_reads_only_the_changed_passages(qmd, tmp_path):
    "A long note edited in one section: `embed` runs the real model on that section's chunk only and copies the others' vectors, which `vsearch` finds as before."
    secs = [('Install', 'Install the package with pip and check the version it prints.'), ('Backups', 'Nightly backups go to the garage drive with restic.'),
            ('Tuning', 'Raise the cache size when the index grows past a million chunks.')]
    text = '# Guide\n\n' + '\n\n'.join(f'## {h}\n\n' + ' '.join([s] * 12) for h, s in secs)
    root = write_tree(tmp_path/'guide', {'guide.md': text})
    qmd('collection', 'add', root, '--name', 'g'); first = qmd.json('embed', '--json')
    assert first['chunks'] >= 3 and first['reused'] == 0
    (root/'guide.md').write_text(text.replace('Raise the cache size', 'Double the cache size', 1), encoding='utf-8'); qmd('update')
    out = qmd('embed').stdout
    assert f"({first['chunks']} chunks: the model read 1, the others repeat passages embedded before)" in out and 'dropped the vectors of 1 documents' in out, out
    hit = qmd.json('vsearch', 'where do the nightly backups go', '--json', '-n', '1')[0]
    assert hit['file'] == 'g/guide.md' and 'restic' in hit['snippet'], hit
    (root/'guide.md').unlink(); qmd('update')
    assert qmd('embed').stdout.strip() == 'Nothing new to embed; dropped the vectors of 1 documents no longer indexed'
    assert 'Vector index not found' in qmd('vsearch', 'where do the nightly backups go', ok=False).stderr # none left at all

def test_embed_compact_gives_back_the_room_of_deleted_vectors_at_once(qmd, tmp_path):
    "`embed --compact`: however few vectors were deleted, the live ones move to a new collection and the old one's files go; searches find the same pages."
    root = write_tree(tmp_path/'kb', {f'n{i}.md': f'# Note {i}\n\nThe garage drive holds backup number {i} made with restic.' for i in range(6)})
    qmd('collection', 'add', root, '--name', 'kb'); qmd('embed')
    for i in range(3): (root/f'n{i}.md').unlink()
    qmd('update'); assert 'dropped the vectors of 3 documents' in qmd('embed').stdout # 3 deleted: far below the automatic rule
    vectors = next((tmp_path/'home').rglob('chroma.sqlite3')).parent
    segments = lambda: {d.name for d in vectors.iterdir() if d.is_dir() and len(d.name) == 36} # Chroma's index folders, named by UUID
    before, old = qmd.json('vsearch', 'backup made with restic', '--json', '-n', '10'), segments()
    out = qmd.json('embed', '--compact', '--json')
    assert out['compacted'] == 3 and out['documents'] == 0, out
    assert old and len(segments()) == len(old) and not segments() & old # the new collection's folders only: the old one's are gone
    after = qmd.json('vsearch', 'backup made with restic', '--json', '-n', '10')
    assert sorted(h['file'] for h in after) == sorted(h['file'] for h in before) == [f'kb/n{i}.md' for i in range(3, 6)]
    assert qmd('embed', '--compact').stdout.strip().startswith('Nothing new to embed; compacted the vector store (3 vectors kept')
