"The REST API and MCP over Streamable HTTP, on a real `qmd-nb serve` process and a real socket, with the default token (tests/test_security.py probes the refusals)."
import asyncio, json, signal, socket, sqlite3, subprocess, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import httpx, pytest
from conftest import QMD_BIN, NOTES, Qmd, write_tree

def free_port() -> int:
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

class Server:
    "`qmd-nb serve` as a subprocess, and an HTTP client sending the default token; stops it with SIGTERM and checks it went cleanly."
    def __init__(self, qmd, *args, transport='http', stdin=subprocess.DEVNULL):
        self.port = free_port(); self.url = f'http://127.0.0.1:{self.port}'
        self.p = subprocess.Popen([QMD_BIN, 'serve', '--transport', transport, '--port', str(self.port), *args], env=qmd.env,
                                  stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        t0 = time.time()
        while True:
            try:
                if httpx.get(self.url + '/health', timeout=1).status_code == 200: break
            except httpx.TransportError: pass
            assert self.p.poll() is None, f"server exited: {self.p.stderr.read().decode()}"
            assert time.time() - t0 < 30, "server did not start in 30 s"
            time.sleep(0.05)
        self.token = (Path(qmd.home)/'config'/'token').read_text(encoding='utf-8').strip() # made by serve on first use
        self.http = httpx.Client(base_url=self.url, timeout=120, headers={'Authorization': f'Bearer {self.token}'})

    def post(self, path, body=None, **kw): return self.http.post(path, json=body, **kw)
    def get(self, path, **kw): return self.http.get(path, **kw)
    def put(self, path, **kw): return self.http.put(path, **kw)
    def delete(self, path, **kw): return self.http.delete(path, **kw)

    def stop(self):
        self.http.close(); self.p.send_signal(signal.SIGTERM)
        try: out, err = self.p.communicate(timeout=30)
        except subprocess.TimeoutExpired: # say what the server was doing, rather than only that it hung
            self.p.kill(); out, err = self.p.communicate()
            raise AssertionError(f"server still running 30 s after SIGTERM (exit {self.p.returncode}); stderr: {err.decode()[-3000:]}") from None
        return self.p.returncode, out.decode(), err.decode()

def _serve_notes(qmd, notes, allow):
    qmd('collection', 'add', notes, '--name', 'notes')
    qmd('context', 'add', 'qmd://notes/journals', 'Daily journal entries')
    s = Server(qmd, '--allow-path', allow) # the tests add folders and ingest files from there
    s.qmd = qmd # the command line on the server's index
    yield s
    code, out, err = s.stop()
    assert code == 0 and out == '', (code, out, err)

@pytest.fixture
def server(qmd, notes, tmp_path):
    "A server of its own, for a test that changes the index."
    yield from _serve_notes(qmd, notes, tmp_path)

@pytest.fixture(scope='module')
def shared(tmp_path_factory):
    "One server for the tests that only read (each checks the index is as it found it): starting one costs ~5 s."
    root = tmp_path_factory.mktemp('shared')
    yield from _serve_notes(Qmd(root/'home'), write_tree(root/'notes', NOTES), root)

def schema_check(openapi:dict, path:str, method:str, status:int, body):
    "Validate a real response body against the OpenAPI description of that operation."
    import jsonschema
    resp = openapi['paths'][path][method]['responses'][str(status)]
    schema = resp['content']['application/json']['schema']
    jsonschema.Draft202012Validator({**schema, 'components': openapi['components']}).validate(body)

def test_rest_contract(shared):
    s = shared
    r = s.post('/search', {'query': 'rsync', 'limit': 5}).json()
    assert [x['file'] for x in r['results']] == ['notes/backup.md', 'notes/journals/2025-05-01.md']
    assert r['content'].startswith('Found 2 results for "rsync"\n\n#') and '% notes/backup.md - Backup strategy' in r['content']
    assert r['results'][1]['context'] == 'Daily journal entries' and r['results'][0]['snippet'].split(':')[0].isdigit()
    assert s.post('/search', {'query': 'zebra'}).json() == {'results': [], 'content': 'No results found for "zebra"'}
    assert s.post('/search', {'query': 'rsync', 'min_score': 0.99}).json()['results'] == []
    v = s.post('/vsearch', {'query': 'keeping files safe'})
    assert (v.status_code, v.json()) == (503, {'detail': "Vector index not found. Run 'qmd embed' first to create embeddings.", 'status_code': 503})
    assert s.post('/query', {'query': 'rsync copy'}).json()['results'][0]['file'] == 'notes/backup.md' # no vectors: keyword search
    g = s.post('/get', {'file': 'notes/journals/2025-05-01.md:3', 'max_lines': 2, 'line_numbers': True}).json()
    assert g == {'document': {'uri': 'qmd://notes/journals/2025-05-01.md', 'name': 'notes/journals/2025-05-01.md', 'title': 'May 1',
                 'mimeType': 'text/markdown', 'text': '<!-- Context: Daily journal entries -->\n\n3: Meeting about the rsync daemon migration.\n4: line 5\n\n[...truncated 54 more lines]'},
                 'content': None}
    nf = s.post('/get', {'file': 'notes/bakup.md'})
    assert nf.status_code == 404 and nf.json()['detail'].startswith('Document not found: notes/bakup.md\n\nDid you mean one of these?\n  - notes/backup.md')
    m = s.post('/multi_get', {'pattern': 'notes/big.md, pasta.md'}).json()
    assert m['results'][0] == {'type': 'text', 'text': "[SKIPPED: notes/big.md - File too large (21KB). Use 'qmd get' with file=\"notes/big.md\" to retrieve.]"}
    assert m['results'][1]['name'] == 'notes/cooking/pasta.md' and m['content'] is None
    st = s.get('/status').json()
    assert (st['total_documents'], st['needs_embedding'], st['has_vector_index']) == (8, 8, False)
    assert st['collections'][0]['name'] == 'notes' and st['content'].startswith('QMD Index Status:\n  Total documents: 8')
    assert s.get('/health').json()['status'] == 'healthy'

def test_embed_endpoint(shared):
    server = shared
    e = server.post('/embed', {'texts': ['backups with rsync', 'pasta recipe']}).json()['embeddings']
    assert len(e) == 2 and len(e[0]) == 384 and abs(sum(x * x for x in e[0]) - 1) < 1e-3
    assert server.get('/health').json() == {'status': 'healthy', 'model_loaded': True}
    assert server.post('/embed', {'texts': []}).json() == {'detail': 'Empty texts list', 'status_code': 400}
    big = server.post('/embed', {'texts': ['x'] * 1001})
    assert (big.status_code, big.json()['detail']) == (413, 'Too many texts (1001 > 1000)')

def test_management_endpoints(server, tmp_path):
    s = server
    extra = write_tree(tmp_path/'extra', {'a.md': '# A\n\nzebra crossing\n', 'b.txt': 'zebra text\n'})
    a = s.post('/collections/add', {'name': 'extra', 'path': str(extra), 'glob_pattern': '**/*.md'}).json()
    assert a == {'status': 'added', 'name': 'extra', 'path': str(extra), 'documents': 1, 'content': "Added collection 'extra' with 1 document"}
    assert s.post('/collections/add', {'name': 'extra', 'path': str(extra)}).status_code == 400 # exists already
    twice = s.post('/collections/add', {'name': 'again', 'path': str(extra)}) # the same folder under another name
    assert twice.status_code == 400 and "is already collection 'extra'" in twice.json()['detail'] and '"force": true' in twice.json()['detail']
    assert s.post('/collections/add', {'name': 'again', 'path': str(extra), 'glob_pattern': '**/*.txt', 'force': True}).json()['documents'] == 1
    assert s.delete('/collections/again').json()['status'] == 'removed'
    assert s.get('/collections').json()['content'] == 'Collections: 2\n- notes (8 docs)\n- extra (1 docs)'
    d = s.get('/collections/extra').json()
    assert (d['documents'], d['pattern']) == (1, '**/*.md') and d['last_indexed']
    assert s.get('/collections/nope').status_code == 404
    assert s.put('/collections/extra', json={'new_name': 'zoo'}).json()['content'] == "Renamed 'extra' to 'zoo'"
    assert s.post('/search', {'query': 'zebra'}).json()['results'][0]['file'] == 'zoo/a.md'
    (extra/'c.md').write_text('# C\n\nzebra stripes\n', encoding='utf-8')
    assert s.post('/index').json() == {'status': 'indexed', 'collections': 2, 'total_documents': 10, 'content': 'Indexed 2 collections: 10 documents'}
    assert s.post('/update', {'pull': True}).json() == {'status': 'updated', 'collections': 2, 'content': 'Updated 2 collections'}
    assert s.post('/update').json()['status'] == 'updated' # the body is optional
    assert s.post('/contexts/add', {'path': str(extra), 'text': 'Animals'}).json() == {'status': 'added', 'path': str(extra), 'content': f'Added context for {str(extra)}'}
    assert {'path': str(extra.resolve()), 'text': 'Animals', 'uri': 'qmd://zoo'} in s.get('/contexts').json()['contexts'] # the folder, as the contract lists it
    assert s.post('/search', {'query': 'zebra'}).json()['results'][0]['context'] == 'Animals'
    assert s.delete('/contexts/qmd://zoo').json() == {'status': 'removed', 'path': 'qmd://zoo'}
    assert s.delete('/contexts/qmd://zoo').status_code == 404
    assert s.delete('/collections/zoo').json() == {'status': 'removed', 'name': 'zoo', 'content': "Removed collection 'zoo'"}
    assert s.get('/status').json()['total_documents'] == 8

def test_openapi_matches_the_server(server, tmp_path):
    s = server; api = s.get('/openapi.json').json()
    want = {('/search', 'post'), ('/vsearch', 'post'), ('/query', 'post'), ('/get', 'post'), ('/multi_get', 'post'), ('/status', 'get'),
            ('/embed', 'post'), ('/collections/add', 'post'), ('/collections', 'get'), ('/collections/{name}', 'get'),
            ('/collections/{name}', 'delete'), ('/collections/{name}', 'put'), ('/index', 'post'), ('/update', 'post'),
            ('/contexts/add', 'post'), ('/contexts', 'get'), ('/contexts/{path}', 'delete'), ('/health', 'get'),
            ('/ingest', 'post'), ('/jobs/{job_id}', 'get')} # the contract's endpoints, and ingestion
    assert {(p, m) for p, ms in api['paths'].items() for m in ms} == want
    assert set(api['paths']['/search']['post']['responses']) >= {'200', '400', '404', '413', '503'}
    memo = tmp_path/'memo.md'; memo.write_text('# Memo\n\nquokka\n', encoding='utf-8')
    job = s.post('/ingest', {'source': str(memo), 'library': 'inbox', 'background': True})
    for path, method, status, resp in [
            ('/search', 'post', 200, s.post('/search', {'query': 'rsync'})), ('/search', 'post', 400, s.post('/search', {'query': 1})),
            ('/vsearch', 'post', 503, s.post('/vsearch', {'query': 'x'})), ('/query', 'post', 200, s.post('/query', {'query': 'rsync'})),
            ('/get', 'post', 200, s.post('/get', {'file': 'backup.md'})), ('/get', 'post', 404, s.post('/get', {'file': 'nope.md'})),
            ('/multi_get', 'post', 200, s.post('/multi_get', {'pattern': 'notes/*.md'})), ('/status', 'get', 200, s.get('/status')),
            ('/collections', 'get', 200, s.get('/collections')), ('/collections/{name}', 'get', 200, s.get('/collections/notes')),
            ('/contexts', 'get', 200, s.get('/contexts')), ('/health', 'get', 200, s.get('/health')),
            ('/embed', 'post', 413, s.post('/embed', {'texts': ['x'] * 1001})), ('/ingest', 'post', 202, job),
            ('/ingest', 'post', 200, s.post('/ingest', {'source': str(memo), 'library': 'inbox2'})),
            ('/jobs/{job_id}', 'get', 200, s.get(f"/jobs/{job.json()['id']}")), ('/jobs/{job_id}', 'get', 404, s.get('/jobs/nope'))]:
        assert resp.status_code == status, (path, resp.text)
        schema_check(api, path, method, status, resp.json())

def index_state(qmd):
    st = qmd.json('status', '--json')
    return st['total_documents'], [(c['name'], c['documents']) for c in st['collections']]

BAD = [ # (method, path, body, status, words the detail must contain)
    ('post', '/search', {}, 400, 'query: required'), ('post', '/search', {'query': ''}, 400, 'query'),
    ('post', '/search', {'query': 5}, 400, 'query'), ('post', '/search', {'query': 'x', 'limit': 'many'}, 400, 'limit'),
    ('post', '/search', {'query': 'x', 'limit': -3}, 400, 'limit'), ('post', '/search', {'query': 'x', 'limit': 10**9}, 400, 'limit'),
    ('post', '/search', {'query': 'x', 'min_score': 2}, 400, 'min_score'), ('post', '/search', {'query': 'x', 'collection': 'nope'}, 400, 'nope'),
    ('post', '/query', {'query': 'x', 'collection': 'nope'}, 400, 'Collection not found: nope'), # a bad filter: the contract keeps 404 for /get
    ('post', '/search', {'query': 'x', 'limt': 3}, 400, 'limt: unknown parameter'), ('post', '/search', [1, 2], 400, 'object'),
    ('post', '/vsearch', {'query': 'x', 'limit': 0}, 400, 'limit'), ('post', '/query', {'limit': 5}, 400, 'query'),
    ('post', '/query', {'query': 'x', 'searches': [{'type': 'sql', 'query': 'y'}]}, 400, 'searches.0.type'),
    ('post', '/query', {'query': 'x', 'candidate_limit': 10**6}, 400, 'candidate_limit'),
    ('post', '/get', {}, 400, 'file'), ('post', '/get', {'file': '../../etc/passwd'}, 404, 'Document not found: ../../etc/passwd'),
    ('post', '/get', {'file': '/etc/passwd'}, 404, 'Document not found'), ('post', '/get', {'file': 'backup.md', 'from_line': -1}, 400, 'from_line'),
    ('post', '/get', {'file': 'backup.md', 'max_lines': 'x'}, 400, 'max_lines'),
    ('post', '/multi_get', {'pattern': '../../etc/*'}, 404, 'No documents matched'), ('post', '/multi_get', {'pattern': 'x', 'max_bytes': -1}, 400, 'max_bytes'),
    ('post', '/embed', {'texts': 'abc'}, 400, 'texts'), ('post', '/embed', {'texts': [1]}, 400, 'texts.0'),
    ('post', '/collections/add', {'name': 'x'}, 400, 'path: required'), ('post', '/collections/add', {'name': '../x', 'path': '/tmp'}, 400, 'name'),
    ('post', '/collections/add', {'name': 'x', 'path': '../../etc/passwd'}, 403, 'Path not allowed'),
    ('put', '/collections/notes', {}, 400, 'new_name'), ('put', '/collections/notes', {'new_name': 'a/b'}, 400, 'a/b'),
    ('put', '/collections/nope', {'new_name': 'b'}, 404, 'nope'), ('delete', '/collections/nope', None, 404, 'nope'),
    ('post', '/update', {'pull': 'yes please'}, 400, 'pull'), ('post', '/contexts/add', {'path': '/etc', 'text': 'x'}, 400, 'neither'),
    ('delete', '/contexts/qmd://nope', None, 404, 'qmd://nope'), ('get', '/nope', None, 404, 'Not Found'), ('get', '/search', None, 405, 'Method Not Allowed'),
]

def test_bad_input_is_refused_clearly(shared):
    server, qmd = shared, shared.qmd
    before = index_state(qmd)
    for method, path, body, status, words in BAD:
        r = server.http.request(method.upper(), path, **({} if body is None else {'json': body}))
        j = r.json()
        assert (r.status_code, j['status_code']) == (status, status) and words in j['detail'], (method, path, body, r.status_code, j)
    big = server.http.post('/search', content=b'{"query": "' + b'x' * (9 << 20) + b'"}', headers={'content-type': 'application/json'})
    assert big.status_code == 413 and 'too large' in big.json()['detail']
    bad_json = server.http.post('/search', content=b'{"query": ', headers={'content-type': 'application/json'})
    assert bad_json.status_code == 400 and 'not valid JSON' in bad_json.json()['detail']
    assert server.get('/health').json()['status'] == 'healthy' and index_state(qmd) == before

def test_dns_rebinding_protection(qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes')
    s = Server(qmd, '--allowed-origins', 'https://app.example')
    try:
        body = {'query': 'rsync'}
        assert s.post('/search', body, headers={'Host': 'evil.example'}).status_code == 421
        assert s.post('/search', body, headers={'Origin': 'http://evil.example'}).status_code == 403
        assert s.post('/search', body, headers={'Origin': f'http://localhost:{s.port}'}).status_code == 200
        assert s.post('/search', body, headers={'Origin': 'https://app.example'}).status_code == 200
        init = {'jsonrpc': '2.0', 'id': 1, 'method': 'initialize', 'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 't', 'version': '1'}}}
        h = {'Accept': 'application/json, text/event-stream'}
        assert s.post('/mcp', init, headers={**h, 'Host': 'evil.example'}).status_code == 421
        assert s.post('/mcp', init, headers={**h, 'Origin': 'http://evil.example'}).status_code == 403
        assert s.post('/mcp', init, headers=h).status_code == 200
    finally: assert s.stop()[0] == 0

def test_index_changes_are_queued_while_searches_go_on(server, qmd, tmp_path):
    folders = [write_tree(tmp_path/f'c{i}', {f'd{j}.md': f'# Doc {j}\n\nquokka {i} {j}\n' for j in range(40)}) for i in range(4)]
    def change(i):
        if i < 4: return server.post('/collections/add', {'name': f'c{i}', 'path': str(folders[i])}).status_code
        return server.post('/update' if i % 2 else '/index').status_code
    def look(i): return server.post('/search', {'query': 'rsync'}).status_code, len(server.post('/search', {'query': 'rsync'}).json()['results'])
    with ThreadPoolExecutor(12) as ex:
        changes = list(ex.map(change, range(8)))
        looks = list(ex.map(look, range(60)))
    assert changes == [200] * 8 and looks == [(200, 2)] * 60
    assert index_state(qmd)[0] == 8 + 160
    assert server.post('/search', {'query': 'quokka', 'limit': 1000}).json()['results'].__len__() == 160
    db = sqlite3.connect(next(Path(qmd.home).rglob('*.sqlite')))
    assert db.execute('PRAGMA integrity_check').fetchone()[0] == 'ok'

def test_a_running_server_sees_vectors_another_process_embedded(server, qmd, notes):
    "A terminal's `update` and `embed` beside a running server: its vector searches go on answering, and find the new page (Chroma's client never sees another process's writes by itself: each later vsearch failed, 500 'Error finding id')."
    qmd('embed')
    assert server.post('/vsearch', {'query': 'pasta recipe'}).status_code == 200 # the server's view of the vectors is open
    (notes/'garden.md').write_text('# Garden\n\nTulips and roses bloom in the spring garden.\n', encoding='utf-8')
    qmd('update'); qmd('embed')
    for path in ('/vsearch', '/query'):
        r = server.post(path, {'query': 'flowers blooming in spring', 'limit': 3})
        assert r.status_code == 200, r.text
        assert r.json()['results'][0]['file'] == 'notes/garden.md'

async def _mcp_http(server, fn):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    http = create_mcp_http_client(headers={'Authorization': f'Bearer {server.token}'})
    async with Client(streamable_http_client(server.url + '/mcp', http_client=http)) as c: return await fn(c)

def test_mcp_over_streamable_http(shared):
    async def run(c):
        out = {'tools': {t.name: t for t in (await c.list_tools()).tools}}
        out['search'] = await c.call_tool('search', {'query': 'rsync', 'limit': 5})
        out['vsearch'] = await c.call_tool('vsearch', {'query': 'keeping files safe'})
        out['get'] = await c.call_tool('get', {'file': 'journals/2025-05-01.md:3', 'maxLines': 2, 'lineNumbers': True})
        out['multi'] = await c.call_tool('multi_get', {'pattern': 'notes/big.md, pasta.md'})
        out['status'] = await c.call_tool('status', {})
        out['bad'] = await c.call_tool('search', {'query': 'x', 'limit': -1})
        out['doc'] = await c.read_resource('qmd://notes/cooking/pasta.md')
        out['prompt'] = await c.get_prompt('query')
        return out
    o = asyncio.run(_mcp_http(shared, run))
    assert set(o['tools']) == {'search', 'vsearch', 'query', 'get', 'multi_get', 'status'}
    assert o['search'].content[0].text.startswith('Found 2 results for "rsync":') and o['search'].structured_content['results'][0]['file'] == 'notes/backup.md'
    assert o['vsearch'].is_error and 'Vector index not found' in o['vsearch'].content[0].text
    assert o['get'].content[0].resource.text.endswith('[... truncated 54 more lines]')
    assert o['multi'].content[0].text == 'Errors:\nFile too large: notes/big.md (skipped)'
    assert o['status'].structured_content['totalDocuments'] == 8
    assert o['bad'].is_error and 'limit' in o['bad'].content[0].text
    assert o['doc'].contents[0].text.startswith('1: # Pasta') and o['prompt'].messages[0].content.text.startswith('# QMD')

def test_server_mode_prints_what_local_mode_prints(shared):
    server, qmd = shared, shared.qmd
    for fmt in ('cli', 'json', 'files'):
        local = qmd('search', 'rsync', '--format', fmt).stdout
        remote = qmd('search', 'rsync', '--format', fmt, '--mode', 'server', '--server', server.url).stdout
        assert remote == local and local
    assert qmd('query', 'rsync copy', '--mode', 'server', '--server', server.url).stdout == qmd('query', 'rsync copy').stdout
    r = qmd('search', 'x', '-c', 'nope', '--mode', 'server', '--server', server.url, ok=False)
    assert r.returncode == 1 and 'Collection not found: nope' in r.stderr

def test_server_mode_without_a_server(qmd):
    r = qmd('search', 'rsync', '--mode', 'server', '--server', f'http://127.0.0.1:{free_port()}', ok=False)
    assert r.returncode == 1 and 'No qmd-nb server answering at' in r.stderr and 'qmd-nb serve' in r.stderr

def test_both_transports_in_one_process(qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes')
    s = Server(qmd, transport='both', stdin=subprocess.PIPE)
    init = {'jsonrpc': '2.0', 'id': 1, 'method': 'initialize', 'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 't', 'version': '1'}}}
    s.p.stdin.write((json.dumps(init) + '\n').encode()); s.p.stdin.flush()
    line = json.loads(s.p.stdout.readline())
    assert line['id'] == 1 and line['result']['serverInfo']['name'] == 'qmd'
    assert s.post('/search', {'query': 'rsync'}).json()['results'][0]['file'] == 'notes/backup.md'
    s.p.stdin.close() # end of input ends the whole server
    assert s.p.wait(timeout=30) == 0
    assert s.p.stdout.read() == b'' # nothing but protocol messages on stdout

def test_port_in_use(shared):
    qmd, server = shared.qmd, shared
    r = qmd('serve', '--port', server.port, ok=False)
    assert r.returncode == 1 and f'Cannot listen on 127.0.0.1:{server.port}' in r.stderr

def test_mcp_config(qmd):
    out = qmd('--index', 'work', 'mcp-config').stdout
    desktop = json.loads(out.split('\n\n')[1])['mcpServers']['qmd-nb']
    assert Path(desktop['command']).is_absolute() and Path(desktop['command']).exists() and desktop['args'] == ['--index', 'work', 'mcp']
    assert desktop['env'] == {'QMD_NB_HOME': str(qmd.home)}
    assert f"claude mcp add qmd-nb -e QMD_NB_HOME={qmd.home} -- {desktop['command']} --index work mcp" in out

def test_stdio_server_stops_on_sigterm_and_end_of_input(qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes')
    for how in ('eof', 'term'):
        p = subprocess.Popen([QMD_BIN, 'mcp'], env=qmd.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(1.0)
        if how == 'eof': p.stdin.close()
        else: p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=20) in (0, -signal.SIGTERM), how
        assert p.stdout.read() == b''
        kids = subprocess.run(['pgrep', '-P', str(p.pid)], capture_output=True, text=True, encoding='utf-8').stdout
        assert kids == '', how

MCP_BAD = [ # (tool, arguments, words the error must contain)
    ('search', {}, 'query'), ('search', {'query': 5}, 'query'), ('search', {'query': 'x', 'limit': 'many'}, 'limit'),
    ('search', {'query': 'x', 'limit': -1}, 'limit'), ('search', {'query': 'x', 'limit': 10**9}, 'limit'),
    ('search', {'query': 'x', 'minScore': 7}, 'minScore'), ('search', {'query': 'x', 'collection': 'nope'}, 'nope'),
    ('vsearch', {'query': 'x', 'limit': 0}, 'limit'), ('query', {}, 'query'),
    ('query', {'query': 'x', 'searches': [{'type': 'lex', 'query': 'y'}]}, 'either query or searches'),
    ('query', {'query': 'x', 'candidateLimit': 10**6}, 'candidateLimit'), ('get', {}, 'file'),
    ('get', {'file': '../../etc/passwd'}, 'Document not found: ../../etc/passwd'), ('get', {'file': '/etc/passwd'}, 'Document not found'),
    ('get', {'file': 'backup.md', 'fromLine': -5}, 'fromLine'), ('multi_get', {'pattern': '../../etc/*'}, 'No documents matched'),
    ('multi_get', {'pattern': 'x', 'maxBytes': -1}, 'maxBytes'),
]

def test_mcp_bad_input_is_refused_clearly(shared):
    server, qmd = shared, shared.qmd
    before = index_state(qmd)
    async def run(c):
        out = [(t, a, await c.call_tool(t, a)) for t, a, _ in MCP_BAD]
        unknown = await c.call_tool('drop_index', {})
        return out, unknown, await c.call_tool('search', {'query': 'rsync'})
    out, unknown, after = asyncio.run(_mcp_http(server, run))
    for (tool, args, r), (_, _, words) in zip(out, MCP_BAD):
        assert r.is_error and words in r.content[0].text, (tool, args, r.content[0].text)
    assert unknown.is_error and 'drop_index' in unknown.content[0].text
    assert not after.is_error and after.structured_content['results'][0]['file'] == 'notes/backup.md'
    assert index_state(qmd) == before

def test_vector_searches_beside_another_process_embedding_keep_the_store_whole(qmd, tmp_path):
    "Chroma's embedded store is not safe for two processes at once (its reads write index files too): a server searching while a terminal embeds wrecked it for good (every vsearch 500 after, the CLI's too) until each process took turns."
    import random, threading
    qmd.env['QMD_NB_EMBED_MODEL'] = 'hash' # instant vectors: the turns are the point, not the model
    rng, words = random.Random(7), [f'w{i}' for i in range(300)]
    page = lambda i, salt: f'# Note {i}\n\n' + ' '.join(rng.sample(words, 40)) + f' {salt}{i}\n'
    root = tmp_path/'w'; root.mkdir()
    for i in range(1200): (root/f'n{i}.md').write_text(page(i, 'first'), encoding='utf-8')
    qmd('collection', 'add', root, '--name', 'w'); qmd('embed')
    s = Server(qmd); codes, stop = {}, threading.Event()
    def reader(path):
        while not stop.is_set():
            r = s.post(path, {'query': ' '.join(rng.sample(words, 3)), 'limit': 10})
            codes[(path, r.status_code)] = codes.get((path, r.status_code), 0) + 1
    threads = [threading.Thread(target=reader, args=(p,)) for p in ('/vsearch', '/query', '/vsearch')]
    try:
        for t in threads: t.start()
        for k in range(3): # a terminal rewrites half the notes, and embeds them, while the server answers
            for i in range(k % 2, 1200, 2): (root/f'n{i}.md').write_text(page(i, f'round{k}'), encoding='utf-8')
            qmd('update'); qmd('embed')
    finally:
        stop.set()
        for t in threads: t.join(60)
    after = s.post('/vsearch', {'query': 'round2 w1 w2', 'limit': 3}).status_code
    cli = qmd('vsearch', 'w1 w2 w3', ok=False).returncode
    code, _, err = s.stop()
    assert {c for (_, c) in codes} == {200} and after == 200 and cli == 0, (codes, after, cli, err[-2000:])
