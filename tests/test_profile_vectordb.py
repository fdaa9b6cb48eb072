"The vectordb profile over stdio: `qmd-nb mcp --tools vectordb` as a subprocess, driven by the official SDK's client."
import asyncio, io, json, os, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import pytest
from conftest import QMD_BIN, write_tree

FILLER = 'Plain words about nothing in particular fill this line. '

def make_pdf(pages:list[str]) -> bytes:
    from fpdf import FPDF
    pdf = FPDF(); pdf.set_font('helvetica', size=11)
    for t in pages: pdf.add_page(); pdf.multi_cell(0, 5, t)
    return bytes(pdf.output())

def make_docx(title:str, paras:list[str]) -> bytes:
    import docx
    d = docx.Document(); d.core_properties.title = title; d.add_heading(title, 0)
    for p in paras: d.add_paragraph(p)
    b = io.BytesIO(); d.save(b); return b.getvalue()

class _Page(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path != '/guide.html': self.send_response(404); self.end_headers(); return
        body = b'<html><head><title>Wombat guide</title></head><body><h1>Wombat guide</h1><p>Wombats dig burrows at night.</p></body></html>'
        self.send_response(200); self.send_header('Content-Type', 'text/html; charset=utf-8')
        self.send_header('Content-Length', str(len(body))); self.send_header('Last-Modified', 'Wed, 21 Oct 2015 07:28:00 GMT')
        self.end_headers(); self.wfile.write(body)

@pytest.fixture
def web():
    srv = ThreadingHTTPServer(('127.0.0.1', 0), _Page)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f'http://127.0.0.1:{srv.server_address[1]}'
    srv.shutdown(); srv.server_close()

async def _session(qmd, fn):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    async with Client(StdioServerParameters(command=QMD_BIN, args=['mcp', '--tools', 'vectordb', '--allow-private-urls'], env=qmd.env)) as c: return await fn(c)

def test_vectordb_contract(qmd, tmp_path, web):
    files = write_tree(tmp_path/'in', {
        'attention.md': "# Attention\n\nThe transformer replaces recurrence with self-attention.\n\nThe learning rate warms up for 4000 steps.\n",
        'todo.txt': "Buy milk. Read about the platypus.\n",
        'spec.pdf': make_pdf(['The capybara protocol starts here. ' + FILLER * 30, FILLER * 20 + 'The second page defines the quokka handshake. ' + FILLER * 10]),
        'short.pdf': make_pdf(['Wombats dig burrows.', 'The quokka smiles.']),
        'memo.docx': make_docx('Rotation memo', ['Rotate the numbat disks every Friday.']),
        'pouch.md': '# Pouch\n\nMarsupials carry their young in a pouch.\n',
        'zebras.md': '# Zebras\n\n' + '\n\n'.join(f'Zebra herd {i} grazes the plain; the stripes of each zebra differ. ' + FILLER * 12 for i in range(8))})
    os.utime(files/'todo.txt', (1577836800, 1577836800)) # 2020-01-01: the document's date, whenever it is ingested
    write_tree(tmp_path/'notes', {'ideas.md': '# Ideas\n\nA learning rate finder.\n'})
    qmd('collection', 'add', tmp_path/'notes', '--name', 'notes')
    async def run(c):
        call = lambda t, a: c.call_tool(t, a)
        o = {'tools': {t.name: t for t in (await c.list_tools()).tools}, 'server': (c.server_info.name, c.server_info.version)}
        o['md'] = await call('ingest_file', {'path': str(files/'attention.md'), 'library': 'papers', 'metadata': {'project': 'nlp'}})
        o['again'] = await call('ingest_file', {'path': str(files/'attention.md'), 'library': 'papers', 'metadata': {'project': 'nlp'}})
        (files/'attention.md').write_text((files/'attention.md').read_text(encoding='utf-8') + "\nDropout everywhere.\n", encoding='utf-8')
        o['replaced'] = await call('ingest_file', {'path': str(files/'attention.md'), 'library': 'papers', 'metadata': {'project': 'nlp'}})
        o['txt'] = await call('ingest_file', {'path': str(files/'todo.txt')})
        o['dated'] = await call('search', {'query': 'platypus milk', 'filter': {'file_type': 'txt'}})
        o['pouch'] = await call('ingest_file', {'path': str(files/'pouch.md'), 'library': 'zoo'})
        o['meaning'] = await call('search', {'query': 'animals that keep babies in a pocket', 'library': 'zoo'}) # no word in common: vectors, made at ingestion
        o['pdf'] = await call('ingest_file', {'path': str(files/'spec.pdf'), 'library': 'specs'})
        o['docx'] = await call('ingest_file', {'path': str(files/'memo.docx'), 'library': 'specs'})
        o['url'] = await call('ingest_url', {'url': web + '/guide.html', 'library': 'web'})
        o['web'] = await call('search', {'query': 'wombats dig burrows', 'library': 'web'})
        await call('ingest_file', {'path': str(files/'zebras.md'), 'library': 'stripes'})
        o['chunks'] = await call('search', {'query': 'zebra stripes herd', 'library': 'stripes', 'top_k': 10})
        o['search'] = await call('search', {'query': 'learning rate warm up', 'top_k': 5})
        o['quokka'] = await call('search', {'query': 'quokka handshake', 'filter': {'file_type': 'pdf'}})
        o['page1'] = await call('search', {'query': 'quokka capybara', 'filter': {'file_type': 'pdf', 'page': 1}})
        await call('ingest_file', {'path': str(files/'short.pdf'), 'library': 'short'}) # one chunk over both pages
        o['over'] = [await call('search', {'query': 'quokka wombat', 'library': 'short', 'filter': {'page': p}}) for p in (1, 2, 3)]
        o['lib'] = await call('search', {'query': 'learning rate', 'library': 'notes'})
        o['numbat'] = await call('search', {'query': 'numbat', 'filter': {'library': 'specs', 'title': 'Rotation memo'}})
        o['docs'] = await call('list_documents', {'library': 'specs'})
        o['page'] = await call('list_documents', {'limit': 2, 'offset': 1})
        o['libs'] = await call('list_libraries', {})
        o['get'] = await call('get_document', {'doc_id': o['md'].structured_content['doc_id']})
        o['delete'] = await call('delete_document', {'doc_id': o['txt'].structured_content['doc_id']})
        o['gone'] = await call('search', {'query': 'platypus'})
        o['errors'] = [(await call(t, a)).structured_content for t, a in [
            ('ingest_file', {'path': str(tmp_path/'nope.md')}), ('ingest_file', {'path': str(files/'todo.txt'), 'library': 'bad name'}),
            ('ingest_file', {'path': str(files/'todo.txt'), 'metadata': 'x'}), ('ingest_url', {'url': 'ftp://example.com/x'}),
            ('ingest_url', {'url': web + '/missing.html'}), ('search', {'query': 'x', 'top_k': 0}), ('search', {'query': 'x', 'top_k': 101}),
            ('search', {'query': 'x', 'filter': {'colour': 'red'}}), ('search', {'query': ''}), ('list_documents', {'limit': 5000}),
            ('list_documents', {'offset': -1}), ('get_document', {'doc_id': 'not-a-uuid'}),
            ('get_document', {'doc_id': '00000000-0000-0000-0000-000000000000'}), ('delete_document', {'doc_id': o['txt'].structured_content['doc_id']}),
            ('delete_document', {'doc_id': doc_uuid('notes', 'ideas.md')}), ('delete_document', {'doc_id': None}),
            ('ingest_file', {}), ('search', {}), ('get_document', {})]] # a missing argument: the contract's error too, not the SDK's
        return o
    from qmd_nb.engine.ingest import doc_uuid
    o = asyncio.run(_session(qmd, run))
    assert set(o['tools']) == {'ingest_file', 'ingest_url', 'search', 'list_documents', 'list_libraries', 'delete_document', 'get_document'}
    assert o['server'] == ('mcpvectordb', '0.2.0') # the contract's Server Info
    s = o['md'].structured_content
    assert json.loads(o['md'].content[0].text) == s and not o['md'].is_error
    assert (s['status'], s['source'], s['library'], s['chunk_count']) == ('indexed', str(files/'attention.md'), 'papers', 1) and len(s['doc_id']) == 36
    assert o['again'].structured_content == {**s, 'status': 'skipped'} and o['replaced'].structured_content['status'] == 'replaced'
    assert o['replaced'].structured_content['doc_id'] == s['doc_id']
    assert o['txt'].structured_content['library'] == 'default'
    assert (o['pdf'].structured_content['status'], o['docx'].structured_content['status']) == ('indexed', 'indexed')
    assert o['url'].structured_content['source'] == web + '/guide.html' and o['url'].structured_content['library'] == 'web'
    res = o['search'].structured_content['results']
    assert {r['title'] for r in res} >= {'Attention', 'Ideas'}
    att = next(r for r in res if r['title'] == 'Attention')
    assert set(att) == {'doc_id', 'source', 'title', 'library', 'file_type', 'last_modified', 'page', 'content', 'chunk_index', 'metadata'}
    assert (att['doc_id'], att['library'], att['file_type'], att['page'], att['chunk_index'], att['metadata']) == (s['doc_id'], 'papers', 'md', 0, 0, {'project': 'nlp'})
    assert '4000 steps' in att['content'] and att['last_modified'].endswith('+00:00')
    q = o['quokka'].structured_content['results']
    assert len(q) == 1 and q[0]['file_type'] == 'pdf' and q[0]['page'] == 2 and 'quokka' in q[0]['content']
    p1 = o['page1'].structured_content['results']
    assert len(p1) == 1 and p1[0]['page'] == 1 and 'capybara' in p1[0]['content']
    over = [[(r['page'], r['chunk_index']) for r in x.structured_content['results']] for x in o['over']]
    assert over == [[(1, 0)], [(2, 0)], []] # a chunk over a page break meets a filter on either page, and names the page asked for
    assert [r['library'] for r in o['lib'].structured_content['results']] == ['notes']
    assert [r['title'] for r in o['numbat'].structured_content['results']] == ['Rotation memo']
    d = o['docs'].structured_content
    assert d['count'] == 2 and 'Rotation memo' in {x['title'] for x in d['documents']}
    assert set(d['documents'][0]) == {'doc_id', 'source', 'title', 'library', 'content_hash', 'created_at', 'metadata', 'chunk_count'}
    assert o['page'].structured_content['count'] == 2
    libs = {l['library']: l for l in o['libs'].structured_content['libraries']}
    assert {k: v['document_count'] for k, v in libs.items()} == {'notes': 1, 'papers': 1, 'default': 1, 'specs': 2, 'web': 1, 'zoo': 1, 'stripes': 1, 'short': 1}
    assert all(v['chunk_count'] >= v['document_count'] for v in libs.values())
    g = o['get'].structured_content
    assert g['content'].startswith('# Attention') and 'Dropout everywhere.' in g['content'] and g['metadata'] == {'project': 'nlp'} and g['chunk_count'] == 1
    assert o['delete'].structured_content == {'status': 'deleted', 'doc_id': o['txt'].structured_content['doc_id'], 'deleted_chunks': 1}
    assert o['txt'].structured_content['doc_id'] not in {r['doc_id'] for r in o['gone'].structured_content['results']} # (the nearest others by meaning may come)
    errs = o['errors']
    assert all(set(e) == {'status', 'error'} and e['status'] == 'error' for e in errs), errs
    e = [x['error'] for x in errs]
    assert e[0] == f"File not found: {tmp_path/'nope.md'}" and 'library' in e[1] and 'metadata' in e[2] and 'http' in e[3] and '404' in e[4]
    assert e[5] == 'top_k must be an integer from 1 to 100 (got 0)' and e[6] == 'top_k must be an integer from 1 to 100 (got 101)'
    assert e[7].startswith("Invalid filter key 'colour': filterable fields are doc_id, source, title, library, file_type")
    assert 'query' in e[8] and 'limit' in e[9] and 'offset' in e[10] and 'UUID' in e[11] and e[12].startswith('Document not found')
    assert e[13].startswith('Document not found') and 'is a file of the folder collection' in e[14] and 'doc_id' in e[15]
    assert e[16:] == ['path is required', 'query is required', 'doc_id is required']
    assert [r['last_modified'] for r in o['dated'].structured_content['results']] == ['2020-01-01T00:00:00+00:00'] # the file's date, not the ingestion's
    assert [r['last_modified'] for r in o['web'].structured_content['results']] == ['2015-10-21T07:28:00+00:00'] # the page's Last-Modified
    assert [r['title'] for r in o['meaning'].structured_content['results']] == ['Pouch']
    ch = o['chunks'].structured_content['results'] # one long document whose every chunk answers: several of its chunks, not one
    assert len(ch) >= 4 and len({r['doc_id'] for r in ch}) == 1 and len({r['chunk_index'] for r in ch}) == len(ch), ch
