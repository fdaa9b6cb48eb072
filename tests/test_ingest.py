"""PDF, Word and HTML documents end to end: fixtures written with real writer libraries (fpdf2, python-docx), folders indexed by
`qmd-nb collection add`, single files and URLs by `qmd-nb ingest` (URLs from a local HTTP server, which the owner allows: `allow_private=True`), background jobs asked
about from another process."""
import io, json, subprocess, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import pytest
from qmd_nb.engine.store import Store
from qmd_nb.engine.convert import convert_many, page_of
from qmd_nb.engine.ingest import ingest, start_ingest, job_status, wait_job, delete_document, doc_uuid
from qmd_nb.engine.fetch import fetch_url, FetchError
from qmd_nb.engine.documents import status
from qmd_nb.engine.errors import UsageError

MASK = '**/*.md,**/*.txt,**/*.pdf,**/*.docx,**/*.html'

def make_pdf(pages:list[str], title:str|None=None, author:str|None=None) -> bytes:
    "A PDF written by fpdf2; an empty page string draws a filled rectangle (a 'scan': no text layer)."
    from fpdf import FPDF
    pdf = FPDF(); pdf.set_font('helvetica', size=11)
    if title: pdf.set_title(title)
    if author: pdf.set_author(author)
    for t in pages:
        pdf.add_page()
        if t: pdf.multi_cell(0, 5, t)
        else: pdf.set_fill_color(90); pdf.rect(10, 10, 180, 250, style='F')
    return bytes(pdf.output())

def make_docx(title:str, paras:list[str], author:str='Ben') -> bytes:
    import docx
    d = docx.Document(); d.core_properties.title = title; d.core_properties.author = author
    d.add_heading(title, 0)
    for p in paras: d.add_paragraph(p)
    t = d.add_table(rows=2, cols=2)
    for (i, j), v in {(0, 0): 'tool', (0, 1): 'copies', (1, 0): 'restic', (1, 1): '3'}.items(): t.cell(i, j).text = v
    b = io.BytesIO(); d.save(b); return b.getvalue()

HTML = b"""<!doctype html><html><head><meta charset="utf-8"><title>Firewall guide</title>
<meta name="author" content="Chloe"><meta property="article:published_time" content="2025-04-01T08:00:00Z"></head>
<body><h1>Firewall</h1><p>Open port 8443 for the dashboard only.</p><script>var x = 'no';</script></body></html>"""

@pytest.fixture
def docs_dir(tmp_path):
    d = tmp_path/'docs'; d.mkdir()
    (d/'report.pdf').write_bytes(make_pdf(['Disk usage grew by ten percent.', 'The zebra tape library was retired.', 'Budget next year.'],
                                          'Storage report', 'Ana'))
    (d/'scan.pdf').write_bytes(make_pdf(['', '']))
    (d/'memo.docx').write_bytes(make_docx('Rotation memo', ['Rotate the quokka disks every Friday.']))
    (d/'guide.html').write_bytes(HTML)
    (d/'notes.md').write_text('# Notes\n\nPlain markdown still works.\n', encoding='utf-8')
    (d/'broken.docx').write_bytes(b'PK\x03\x04 truncated')
    return d

def test_folder_of_mixed_formats(qmd, docs_dir):
    r = qmd('collection', 'add', docs_dir, '--name', 'docs', '--mask', MASK)
    assert 'scan.pdf' in r.stderr and 'no extractable text' in r.stderr # the run goes on and says what it skipped
    hits = qmd.json('search', 'zebra tape', '--format', 'json')
    assert hits[0]['file'].endswith('docs/report.pdf')
    out = qmd('search', 'zebra tape').stdout
    assert '(page 2)' in out # PDF results cite their page
    assert qmd.json('search', 'quokka', '--format', 'json')[0]['file'].endswith('docs/memo.docx')
    assert qmd.json('search', 'dashboard port', '--format', 'json')[0]['file'].endswith('docs/guide.html')
    got = qmd('get', 'docs/memo.docx').stdout
    assert got.startswith('# Rotation memo') and '| restic | 3 |' in got and got.endswith('\n') # the shell's prompt on a line of its own
    st = qmd.json('status', '--json')
    fails = {f['file']: f['reason'] for f in st['failures']}
    assert set(fails) == {'docs/scan.pdf', 'docs/broken.docx'}
    assert fails['docs/scan.pdf'].startswith('no extractable text') and 'unreadable Word document' in fails['docs/broken.docx']
    # metadata a filter can use
    store = Store(env={'QMD_NB_HOME': str(qmd.home)})
    meta = {p: json.loads(m) for p, m in store.q("SELECT path, meta FROM documents")}
    assert {k: meta['report.pdf'][k] for k in ('title', 'author', 'pages', 'page_lines', 'file_type')} == \
        {'title': 'Storage report', 'author': 'Ana', 'pages': 3, 'page_lines': [1, 3, 5], 'file_type': 'pdf'}
    assert meta['guide.html']['created'] == '2025-04-01T08:00:00+00:00' and meta['guide.html']['author'] == 'Chloe'
    assert meta['memo.docx']['author'] == 'Ben' and meta['notes.md']['file_type'] == 'md'
    assert page_of(meta['report.pdf'], 3) == 2
    # a fixed file is picked up, the failure goes away
    (docs_dir/'broken.docx').write_bytes(make_docx('Fixed', ['now readable']))
    qmd('update')
    assert {f['file'] for f in qmd.json('status', '--json')['failures']} == {'docs/scan.pdf'}

def test_cli_ingest_dedup(qmd, tmp_path):
    f = tmp_path/'plan.pdf'; f.write_bytes(make_pdf(['Migrate the wombat cluster in May.'], 'Plan'))
    r1 = qmd.json('ingest', f, '--library', 'papers', '--metadata', '{"labels": ["ops"], "title": "Migration plan"}', '--json')
    assert (r1['status'], r1['library'], r1['source'], r1['file']) == ('indexed', 'papers', str(f), 'papers/plan.pdf')
    assert r1['chunk_count'] >= 1 and r1['doc_id'] == doc_uuid('papers', 'plan.pdf')
    assert qmd.json('ingest', f, '--library', 'papers', '--json')['status'] == 'skipped'
    f.write_bytes(make_pdf(['Migrate the wombat cluster in June.'], 'Plan'))
    r3 = qmd.json('ingest', f, '--library', 'papers', '--json')
    assert (r3['status'], r3['doc_id']) == ('replaced', r1['doc_id'])
    assert qmd.json('ingest', f, '--library', 'other', '--json')['status'] == 'indexed' # dedup is per library
    assert 'June' in qmd('get', 'papers/plan.pdf').stdout
    hits = qmd.json('search', 'wombat', '--format', 'json', '-c', 'papers')
    assert [h['file'] for h in hits] == ['papers/plan.pdf']
    scan = tmp_path/'scan.pdf'; scan.write_bytes(make_pdf(['']))
    r = qmd('ingest', scan, ok=False)
    assert r.returncode != 0 and 'no extractable text' in r.stderr
    assert str(scan) in {x['file'] for x in qmd.json('status', '--json')['failures']}
    assert qmd('ingest', tmp_path/'missing.pdf', ok=False).returncode == 1
    bad = qmd('ingest', f, '--metadata', '[1]', ok=False)
    assert bad.returncode != 0 and 'must be a JSON object' in bad.stderr
    qmd('update') # a re-scan keeps ingested documents and their metadata
    store = Store(env={'QMD_NB_HOME': str(qmd.home)})
    meta = json.loads(store.q("SELECT meta FROM documents WHERE collection='papers'")[0][0])
    assert meta['source'] == str(f) and meta['file_type'] == 'pdf'

class _Handler(BaseHTTPRequestHandler):
    routes: dict = {}
    def log_message(self, *a): pass
    def do_GET(self):
        r = self.routes.get(self.path)
        if r is None: self.send_response(404); self.end_headers(); return
        if 'sleep' in r: time.sleep(r['sleep'])
        self.send_response(r.get('code', 200))
        for k, v in r.get('headers', {}).items(): self.send_header(k, v)
        body = r.get('body', b'')
        self.send_header('Content-Length', str(len(body))); self.end_headers(); self.wfile.write(body)

@pytest.fixture
def server():
    pdf = make_pdf(['The capybara protocol is documented here.', 'Page two of the spec.'], 'Capybara spec')
    _Handler.routes = {
        '/guide.html': dict(headers={'Content-Type': 'text/html; charset=utf-8'}, body=HTML),
        '/spec': dict(headers={'Content-Type': 'application/pdf'}, body=pdf),
        '/old': dict(code=301, headers={'Location': '/guide.html'}),
        '/loop': dict(code=302, headers={'Location': '/loop'}),
        '/to-ftp': dict(code=302, headers={'Location': 'ftp://example.com/x'}),
        '/logo.png': dict(headers={'Content-Type': 'image/png'}, body=b'\x89PNG....'),
        '/big.txt': dict(headers={'Content-Type': 'text/plain'}, body=b'x' * 5000),
        '/slow.html': dict(headers={'Content-Type': 'text/html'}, body=b'<p>late</p>', sleep=3),
    }
    srv = ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True); t.start()
    yield f'http://127.0.0.1:{srv.server_address[1]}'
    srv.shutdown(); srv.server_close()

def test_fetch_bounds(server):
    f = fetch_url(server + '/old', allow_private=True)
    assert (f.final_url, f.kind, f.charset) == (server + '/guide.html', 'html', 'utf-8')
    with pytest.raises(FetchError, match='redirects more than 2'): fetch_url(server + '/loop', max_redirects=2, allow_private=True)
    with pytest.raises(UsageError, match='Only http'): fetch_url(server + '/to-ftp', allow_private=True)
    with pytest.raises(FetchError, match='Unsupported content type'): fetch_url(server + '/logo.png', allow_private=True)
    with pytest.raises(FetchError, match='too large'): fetch_url(server + '/big.txt', max_bytes=1000, allow_private=True)
    with pytest.raises(FetchError, match='HTTP 404'): fetch_url(server + '/nope', allow_private=True)
    t = time.monotonic()
    with pytest.raises(FetchError, match='timed out'): fetch_url(server + '/slow.html', timeout=0.5, allow_private=True)
    assert time.monotonic() - t < 2.5

def test_ingest_urls(server, tmp_path):
    st = Store(env={'QMD_NB_HOME': str(tmp_path/'home')})
    r = ingest(st, server + '/spec', 'web', {'kind': 'spec'}, allow_private=True)
    assert (r.status, r.file, r.source) == ('indexed', 'web/spec.pdf', server + '/spec')
    assert ingest(st, server + '/spec', 'web', allow_private=True).status == 'skipped'
    g = ingest(st, server + '/old', 'web', allow_private=True)
    assert (g.status, g.file) == ('indexed', 'web/guide.html')
    from qmd_nb.engine.search import search
    hits = search(st, 'capybara protocol')
    assert hits[0].file == 'web/spec.pdf' and hits[0].page == 1
    with pytest.raises(FetchError): ingest(st, server + '/logo.png', 'web', allow_private=True)

def test_jobs_seen_from_another_process(tmp_path, docs_dir):
    home = tmp_path/'home'; st = Store(env={'QMD_NB_HOME': str(home)})
    jid = start_ingest(st, str(docs_dir/'report.pdf'), 'jobs', {'owner': 'ana'})
    bad = start_ingest(st, str(docs_dir/'scan.pdf'), 'jobs')
    assert job_status(st, jid).state in ('processing', 'done')
    assert wait_job(st, jid, 60).state == 'done' and wait_job(st, bad, 60).state == 'failed'
    code = ("import sys, json; from qmd_nb.engine.store import Store; from qmd_nb.engine.ingest import job_status;"
            "st = Store(env={'QMD_NB_HOME': sys.argv[1]}); print(json.dumps([job_status(st, j).__dict__ for j in sys.argv[2:]], default=lambda o: o.__dict__))")
    out = json.loads(subprocess.run([sys.executable, '-c', code, str(home), jid, bad], capture_output=True, text=True, check=True, encoding='utf-8').stdout)
    assert out[0]['state'] == 'done' and out[0]['result']['doc_id'] == doc_uuid('jobs', 'report.pdf')
    assert out[1]['state'] == 'failed' and 'no extractable text' in out[1]['error']
    assert delete_document(st, out[0]['result']['doc_id']) >= 1
    assert not (home/'cache'/'index'/'libraries'/'jobs'/'report.pdf').exists()
    assert status(st).total_documents == 0

def test_conversion_pool_keeps_order_and_errors():
    items = [(make_docx(f'memo {i}', [f'text {i}']), 'docx', f'{i}.docx') for i in range(6)] + [(b'%PDF-1.4 x', 'pdf', 'bad.pdf')]
    res = convert_many(items, workers=2, min_pool=2)
    assert [getattr(r, 'meta', {}).get('title') for r in res] == [f'memo {i}' for i in range(6)] + [None]
    assert 'unreadable PDF' in str(res[-1])
