"""Safe to serve: `qmd-nb serve --transport http` runs as root (the owner), the attacker runs as `nobody`, another local
user, over real sockets. Every probe of issue 13 (server-side paths, Host/Origin tricks, CORS, file modes, ignored
Authorization headers), then every REST endpoint and every MCP tool, resource, prompt and completion of every profile
(qmd, recall, ldims, vectordb, mdq) with each kind of token: none, garbage, expired, revoked, read, write, admin, and
read/write/admin limited to some collections. Each probe's status is asserted, and each answer is searched for what
its asker must not see (a leak): the content, titles, file names, folder and name of a collection it may not see,
experience records, a server-side secret file, and other tokens. The counts of probes and leaks are printed.

The attacker's client is a small script run with the system Python (standard library only) by `su nobody`."""
import asyncio, json, os, re, shutil, subprocess, sys, tempfile, time, uuid
from pathlib import Path
import httpx, pytest
from conftest import QMD_BIN, ATTACKER_LIB, write_tree

if os.geteuid() != 0 or shutil.which('su') is None: pytest.skip("needs root (to run the attacker as nobody)", allow_module_level=True)

MARK = dict(vault='ZQX-SECRET-7731', title='Quetzalvault', file='hidden-plan-9', exp='EXPMARK-5521', srv='SRVFILE-4410', pub='PUBMARK-1200')
TOTALS = {'probes': 0, 'leaks': 0}

# -- the attacker: runs as nobody, executes a plan of requests, prints what it got ------------------------------------
ATTACKER = ATTACKER_LIB + r'''
import os
plan = json.load(open(sys.argv[1]))

def mcp(step): return mcp_session(step['port'], step.get('token'), step['messages'])

def file(step):
    p = step['path']
    try:
        if os.path.isdir(p): return dict(status='listed', body=' '.join(os.listdir(p)))
        with open(p, 'rb') as f: return dict(status='read', body=f.read(2000).decode('utf-8', 'replace'))
    except PermissionError: return dict(status='EACCES', body='')
    except FileNotFoundError: return dict(status='ENOENT', body='')

def sse_event(r):
    "(event, data) of the next event on an SSE stream."
    kind = None
    while True:
        l = r.readline()
        if not l: raise EOFError('the stream ended')
        l = l.decode('utf-8', 'replace').strip()
        if l.startswith('event:'): kind = l[6:].strip()
        elif l.startswith('data:') and kind: return kind, l[5:].strip()

def sse(step):
    "MCP over SSE: open the stream, initialize, send the messages, each answer read off the stream (202s) or from the refusal."
    port, h = step['port'], ({'Authorization': 'Bearer ' + step['token']} if step.get('token') else {})
    init = {'jsonrpc': '2.0', 'id': 0, 'method': 'initialize', 'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'attacker', 'version': '1'}}}
    msgs = [init] + [{'jsonrpc': '2.0', 'id': i, 'method': m, 'params': p} for i, (m, p) in enumerate(step['messages'], 1)]
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=120)
    c.request('GET', '/sse', headers={**h, 'Accept': 'text/event-stream'})
    r = c.getresponse()
    if r.status != 200:
        got = dict(status=r.status, headers={k.lower(): v for k, v in r.getheaders()}, body=r.read(400000).decode('utf-8', 'replace')); c.close()
        return [dict(got, msg=m) for m in msgs]
    path, out = sse_event(r)[1], []
    for m in msgs:
        a = request(port, 'POST', path, m, h)
        while a['status'] == 202 and not a['body'].startswith('{'):
            kind, data = sse_event(r)
            if kind == 'message' and json.loads(data).get('id') == m['id']: a['body'] = data
        out.append(dict(a, msg=m))
        if m['id'] == 0: request(port, 'POST', path, {'jsonrpc': '2.0', 'method': 'notifications/initialized'}, h)
    c.close()
    return out

res = []
for step in plan:
    if step['kind'] == 'http': res.append(request(step['port'], step['method'], step['path'], step.get('body'), step.get('headers')))
    elif step['kind'] == 'mcp': res.append(mcp(step))
    elif step['kind'] == 'sse': res.append(sse(step))
    else: res.append(file(step))
json.dump(res, sys.stdout)
'''

def attack(world, plan:list) -> list:
    "Run the plan as nobody; its results, one per step."
    box = world['box']
    (box/'plan.json').write_text(json.dumps(plan), encoding='utf-8'); (box/'plan.json').chmod(0o644)
    r = subprocess.run(['su', 'nobody', '-s', '/bin/sh', '-c', f"/usr/bin/python3 {box/'attacker.py'} {box/'plan.json'}"],
                       capture_output=True, text=True, timeout=1800, encoding='utf-8')
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)

# -- the world: an index with a public and a private collection, tokens, three servers ---------------------------------
SERVERS = {'qmd': ('qmd', 'recall', 'ldims'), 'vectordb': ('vectordb',), 'mdq': ('mdq',)} # servers of the profiles that can share one

def served() -> dict:
    "server -> its profiles: `SERVERS`, and every other profile of the registry on a server of its own, so a new one is probed too."
    from qmd_nb.profiles.registry import PROFILES
    grouped = [p for ps in SERVERS.values() for p in ps]
    assert set(grouped) <= set(PROFILES), set(grouped) - set(PROFILES)
    return {**SERVERS, **{p: (p,) for p in PROFILES if p not in grouped}}

TOKEN_KINDS = ('read', 'write', 'admin', 'read-pub', 'write-pub', 'admin-pub', 'none', 'garbage', 'expired', 'revoked')
LIMITED = ['pub', 'publib', 'pubx', 'pubx2'] # what the -pub tokens may see

def _serve(qmd, *args):
    from test_rest import free_port
    port = free_port()
    log = open(qmd.home.parent/f'server-{port}.log', 'w', encoding='utf-8') # read by nobody? no: it is in the owner's test folder
    p = subprocess.Popen([QMD_BIN, 'serve', '--transport', 'http', '--port', str(port), *map(str, args)], env=qmd.env,
                         stdout=subprocess.DEVNULL, stderr=log)
    t0 = time.time()
    while True:
        try:
            if httpx.get(f'http://127.0.0.1:{port}/health', timeout=1).status_code == 200: return p, port
        except httpx.TransportError: pass
        assert p.poll() is None, Path(log.name).read_text(encoding='utf-8')
        assert time.time() - t0 < 60, "server did not start"
        time.sleep(0.1)

@pytest.fixture(scope='module')
def world(tmp_path_factory):
    from conftest import Qmd
    base = tmp_path_factory.mktemp('security')
    qmd = Qmd(base/'home')
    pub = write_tree(base/'pub', {'notes.md': f"# Public notes\n\nrsync plans for the backups. {MARK['pub']}\n", 'ops.md': "# Ops\n\nrsync nightly.\n"})
    vault = write_tree(base/'vault7-data', {f"{MARK['file']}.md": f"# {MARK['title']} rsync plans\n\nThe rsync plans of the vault. {MARK['vault']}\n"})
    os.chmod(vault, 0o700); os.chmod(vault/f"{MARK['file']}.md", 0o600)
    allowed = write_tree(base/'allowed', {'memo.md': "# Memo\n\nrsync memo for the public library\n", 'extra/x.md': '# Extra\n\nrsync extra\n'})
    secret_dir = base/'rootonly'; secret_dir.mkdir(mode=0o700)
    srv = secret_dir/'secret.txt'; srv.write_text(f"password={MARK['srv']}\n", encoding='utf-8'); srv.chmod(0o600)
    (allowed/'link-secret').symlink_to(secret_dir); (allowed/'link-vault').symlink_to(vault) # inside an allowed folder, pointing out of it
    qmd('collection', 'add', pub, '--name', 'pub'); qmd('collection', 'add', vault, '--name', 'vault7')
    qmd('context', 'add', 'qmd://vault7', f"The {MARK['title']} collection")
    qmd('embed') # so that the vector store's files are on disk too, and semantic search answers
    tok = {k: qmd('token', 'create', '--scope', k.split('-')[0], *(['--collections', ','.join(LIMITED)] if k.endswith('-pub') else []), '--name', k).stdout.strip()
           for k in ('read', 'write', 'admin', 'read-pub', 'write-pub', 'admin-pub')}
    tok['expired'] = qmd('token', 'create', '--scope', 'admin', '--expires', '1h', '--name', 'expired').stdout.strip()
    tok['revoked'] = qmd('token', 'create', '--scope', 'admin', '--name', 'revoked').stdout.strip()
    qmd('token', 'revoke', 'revoked')
    from qmd_nb.engine.auth import TokenStore
    TokenStore(base/'home'/'config').update(lambda d: [t.update(expires=time.time() - 60) for t in d['tokens'] if t['name'] == 'expired'])
    tok['none'], tok['garbage'] = None, 'qmdnb_deadbeef_' + 'A' * 43
    from qmd_nb.engine.ingest import doc_uuid
    from qmd_nb.engine.store import Store
    st = Store(env={'QMD_NB_HOME': str(base/'home')})
    vault_hash = st.q("SELECT hash FROM documents WHERE collection='vault7'")[0][0]
    st.close()
    # an experience record (recall), which belongs to no collection
    from qmd_nb.profiles.experiences import Recall, submit_experience
    st = Store(env={'QMD_NB_HOME': str(base/'home')})
    assert submit_experience(Recall(st), title=f"rsync plans {MARK['exp']}", problem_description='rsync fails', solution='retry').success
    st.close()
    servers = {name: _serve(qmd, '--tools', ','.join(profiles), '--allow-path', allowed, '--allowed-origins', 'https://app.example')
               for name, profiles in served().items()}
    box = Path(tempfile.mkdtemp(prefix='qmd-nb-attacker-')); box.chmod(0o755)
    (box/'attacker.py').write_text(ATTACKER, encoding='utf-8'); (box/'attacker.py').chmod(0o644)
    w = dict(qmd=qmd, base=base, home=base/'home', pub=pub, vault=vault, allowed=allowed, srv=srv, tok=tok, box=box,
             ports={k: v[1] for k, v in servers.items()}, vault_docid='#' + vault_hash[:6], vault_uuid=doc_uuid('vault7', f"{MARK['file']}.md"))
    yield w
    for p, _ in servers.values():
        p.terminate(); p.wait(30)
    shutil.rmtree(box, ignore_errors=True)

# -- judging ------------------------------------------------------------------------------------------------------------

def forbidden(world, kind:str) -> list[str]:
    "What an answer to a `kind` token must not contain."
    other_tokens = [t for k, t in world['tok'].items() if t and k != kind]
    words = [MARK['srv'], *other_tokens, world['home'].name + '/config']
    vault = [MARK['vault'], MARK['title'], MARK['file'], MARK['exp'], 'vault7', str(world['vault'])]
    if kind.endswith('-pub'): words += vault
    if kind in ('none', 'garbage', 'expired', 'revoked'): words += vault + [MARK['pub'], 'Public notes', str(world['pub'])]
    return words

def leaks(world, kind:str, request, answer:str) -> list[str]:
    "The forbidden strings in `answer` that the request did not itself contain (an echo is no leak)."
    req = json.dumps(request)
    return [w for w in forbidden(world, kind) if w and w in answer and w not in req]

def gate_status(kind:str, scope:str|None, whole:bool=False) -> int|None:
    "401/403 when the token cannot pass for this scope; None when it can (scope None: a public endpoint)."
    if scope is None: return None
    if kind in ('none', 'garbage', 'expired', 'revoked'): return 401
    if ['read', 'write', 'admin'].index(kind.split('-')[0]) < ['read', 'write', 'admin'].index(scope): return 403
    if whole and kind.endswith('-pub'): return 403
    return None

class Tally:
    "Counts probes, collects wrong statuses and leaks, prints and asserts at the end."
    def __init__(self, name): self.name, self.n, self.wrong, self.leaked = name, 0, [], []
    def check(self, world, kind, what, request, status, want, answer):
        self.n += 1
        ok = status in want if isinstance(want, (set, tuple, list)) else status == want
        if not ok: self.wrong.append((kind, what, status, want, answer[:300]))
        if (lk := leaks(world, kind, request, answer)): self.leaked.append((kind, what, lk, answer[:300]))
    def done(self):
        TOTALS['probes'] += self.n; TOTALS['leaks'] += len(self.leaked)
        print(f"\n{self.name}: {self.n} probes, {len(self.leaked)} leaks, {len(self.wrong)} wrong statuses")
        for x in self.leaked: print('  LEAK', x)
        for x in self.wrong: print('  WRONG', x)
        assert not self.leaked, self.leaked[:10]
        assert not self.wrong, self.wrong[:10]

# -- REST -----------------------------------------------------------------------------------------------------------------

def rest_probes(w) -> list:
    "(name, method, path, body, scope, status for unlimited tokens, status for limited ones); None: not probed (destructive)."
    vault_file = str(w['vault']/f"{MARK['file']}.md")
    return [
        ('search', 'POST', '/search', {'query': 'rsync plans'}, 'read', 200, 200),
        ('search-vault', 'POST', '/search', {'query': 'rsync', 'collection': 'vault7'}, 'read', 200, 400), # as for a name that does not exist
        ('vsearch', 'POST', '/vsearch', {'query': 'rsync plans', 'min_score': 0}, 'read', 200, 200),
        ('query', 'POST', '/query', {'query': 'rsync plans'}, 'read', 200, 200),
        ('query-vault', 'POST', '/query', {'query': 'rsync plans', 'collections': ['vault7']}, 'read', 200, 400), # as for a name that does not exist
        ('get-vault', 'POST', '/get', {'file': f"vault7/{MARK['file']}.md"}, 'read', 200, 404),
        ('get-typo', 'POST', '/get', {'file': 'vault7/hidden-plan-8.md'}, 'read', 404, 404),
        ('get-docid', 'POST', '/get', {'file': w['vault_docid']}, 'read', 200, 404),
        ('get-abs', 'POST', '/get', {'file': vault_file}, 'read', 200, 404),
        ('get-server-file', 'POST', '/get', {'file': str(w['srv'])}, 'read', 404, 404),
        ('get-traversal', 'POST', '/get', {'file': 'pub/../../rootonly/secret.txt'}, 'read', 404, 404),
        ('multi_get', 'POST', '/multi_get', {'pattern': '*/*.md'}, 'read', 200, 200),
        ('multi_get-vault', 'POST', '/multi_get', {'pattern': 'vault7/*.md'}, 'read', 200, 404),
        ('multi_get-list', 'POST', '/multi_get', {'pattern': f"pub/ops.md, {w['vault_docid']}"}, 'read', 200, 200),
        ('status', 'GET', '/status', None, 'read', 200, 200),
        ('collections', 'GET', '/collections', None, 'read', 200, 200),
        ('collection-vault', 'GET', '/collections/vault7', None, 'read', 200, 404),
        ('contexts', 'GET', '/contexts', None, 'read', 200, 200),
        ('job', 'GET', '/jobs/nope', None, 'read', 404, 404),
        ('embed', 'POST', '/embed', {'texts': ['rsync']}, 'write', 200, 200),
        ('update', 'POST', '/update', {}, 'write', 200, 200),
        ('index', 'POST', '/index', None, 'write', 200, 200),
        ('context-pub', 'POST', '/contexts/add', {'path': 'qmd://pub', 'text': 'Public notes of the team'}, 'write', 200, 200),
        ('context-vault', 'POST', '/contexts/add', {'path': 'qmd://vault7', 'text': f"The {MARK['title']} collection"}, 'write', 200, {403, 404}),
        ('context-global', 'POST', '/contexts/add', {'path': '/', 'text': 'everything'}, 'write', None, 403),
        ('context-rm', 'DELETE', '/contexts/qmd://nope', None, 'write', 404, 404),
        ('ingest-url-vault', 'POST', '/ingest', {'source': 'http://127.0.0.1:9/x.html', 'library': 'vault7'}, 'write', {400, 403, 502}, 403),
        ('ingest-server-file', 'POST', '/ingest', {'source': str(w['srv']), 'library': 'publib'}, 'admin', 403, 403),
        ('ingest-via-link', 'POST', '/ingest', {'source': str(w['allowed']/'link-secret'/'secret.txt'), 'library': 'publib'}, 'admin', 403, 403),
        ('ingest-via-link-to-vault', 'POST', '/ingest', {'source': str(w['allowed']/'link-vault'/f"{MARK['file']}.md"), 'library': 'publib'}, 'admin', None, 404), # a collection's folder: the unlimited admin may; to the others it is not there
        ('ingest-allowed', 'POST', '/ingest', {'source': str(w['allowed']/'memo.md'), 'library': 'publib'}, 'admin', 200, 200),
        ('ingest-allowed-job', 'POST', '/ingest', {'source': str(w['allowed']/'memo.md'), 'library': 'publib', 'background': True}, 'admin', 202, 202),
        ('collections-add-etc', 'POST', '/collections/add', {'name': 'etc', 'path': '/etc', 'glob_pattern': 'passwd,shadow'}, 'admin', 403, 403),
        ('collections-add-secret', 'POST', '/collections/add', {'name': 'pubx', 'path': str(w['srv'].parent)}, 'admin', 403, 403),
        ('collections-add-link', 'POST', '/collections/add', {'name': 'pubx', 'path': str(w['allowed']/'link-secret')}, 'admin', 403, 403),
        ('collections-add-link-to-vault', 'POST', '/collections/add', {'name': 'pubx', 'path': str(w['allowed']/'link-vault')}, 'admin', None, 400), # another collection's folder: 'Not a folder' for it, as a missing one
        ('collections-add', 'POST', '/collections/add', {'name': 'pubx', 'path': str(w['allowed']/'extra')}, 'admin', 200, 200),
        ('collections-rename', 'PUT', '/collections/pubx', {'new_name': 'pubx2'}, 'admin', 200, 200),
        ('collections-remove', 'DELETE', '/collections/pubx2', None, 'admin', 200, 200),
        ('collections-rename-onto-vault', 'PUT', '/collections/pub', {'new_name': 'vault7'}, 'admin', 400, 403),
        ('collections-rename-vault', 'PUT', '/collections/vault7', {'new_name': 'pubx'}, 'admin', None, 404),
        ('collections-remove-vault', 'DELETE', '/collections/vault7', None, 'admin', None, 404),
        ('health', 'GET', '/health', None, None, 200, 200),
        ('openapi', 'GET', '/openapi.json', None, None, 200, 200),
    ]

def test_rest_endpoints_with_every_kind_of_token(world):
    w, t = world, Tally('REST endpoints x tokens')
    plan, meta = [], []
    for kind in TOKEN_KINDS:
        for name, method, path, body, scope, unl, lim in rest_probes(w):
            want = gate_status(kind, scope) or (lim if kind.endswith('-pub') else unl)
            if want is None: continue
            hdr = {'Authorization': f"Bearer {w['tok'][kind]}"} if w['tok'][kind] else {}
            plan.append(dict(kind='http', port=w['ports']['qmd'], method=method, path=path, body=body, headers=hdr)); meta.append((kind, name, want))
    seen = {}
    for (kind, name, want), step, r in zip(meta, plan, attack(w, plan)):
        t.check(w, kind, name, {'path': step['path'], 'body': step['body']}, r['status'], want, r['body'])
        if r['status'] == 401: assert r['headers'].get('www-authenticate', '').startswith('Bearer realm="qmd-nb"'), r['headers']
        seen[kind, name] = r['body']
    # the probes reached the data: what the unlimited token saw would have been a leak for the limited one
    assert MARK['vault'] in seen['read', 'search'] and MARK['pub'] in seen['read-pub', 'search']
    assert leaks(w, 'read-pub', {}, seen['read', 'search']) and leaks(w, 'none', {}, seen['read-pub', 'search'])
    t.done()
    st = w['qmd'].json('status', '--json') # the private collection is still there, whole
    assert {c['name']: c['documents'] for c in st['collections']} == {'pub': 2, 'vault7': 1, 'publib': 1}

def test_every_rest_operation_is_probed(world):
    "Every operation the running server's OpenAPI lists has a probe above: an endpoint added later is not left unprobed."
    w = world
    spec = httpx.get(f"http://127.0.0.1:{w['ports']['qmd']}/openapi.json", headers={'Authorization': f"Bearer {w['tok']['admin']}"}).json()
    probed = [(m, p.split('?')[0]) for _, m, p, *_ in rest_probes(w)]
    missing = []
    for path, ops in spec['paths'].items():
        rx = re.compile('^' + re.sub(r'\\\{[^}]*\\\}', '.+', re.escape(path)) + '$') # /documents/{docid} matches /documents/anything
        missing += [f'{m.upper()} {path}' for m in ops if not any(pm == m.upper() and rx.match(pp) for pm, pp in probed)]
    assert len(spec['paths']) >= 10 and not missing, missing

# -- MCP ------------------------------------------------------------------------------------------------------------------

def call(name, args): return ('tools/call', {'name': name, 'arguments': args})

def mcp_probes(w) -> dict:
    "profile server -> [(name, message, scope, whole-index)]: every tool, resource, prompt and completion."
    vfile = f"vault7/{MARK['file']}.md"
    return {
        'qmd': [('tools/list', ('tools/list', {}), 'read', False), ('templates', ('resources/templates/list', {}), 'read', False),
                ('search', call('search', {'query': 'rsync plans'}), 'read', False), ('search-vault', call('search', {'query': 'rsync', 'collection': 'vault7'}), 'read', False),
                ('vsearch', call('vsearch', {'query': 'rsync plans', 'minScore': 0}), 'read', False), ('query', call('query', {'query': 'rsync plans'}), 'read', False),
                ('get', call('get', {'file': vfile}), 'read', False), ('get-typo', call('get', {'file': 'vault7/hidden-plan-8.md'}), 'read', False),
                ('get-docid', call('get', {'file': w['vault_docid']}), 'read', False), ('multi_get', call('multi_get', {'pattern': '*/*.md'}), 'read', False),
                ('status', call('status', {}), 'read', False),
                ('resource', ('resources/read', {'uri': f'qmd://{vfile}'}), 'read', False),
                ('resource-typo', ('resources/read', {'uri': 'qmd://vault7/hidden-plan-8.md'}), 'read', False),
                ('complete', ('completion/complete', {'ref': {'type': 'ref/resource', 'uri': 'qmd://{+path}'}, 'argument': {'name': 'path', 'value': ''}}), 'read', False),
                ('complete-vault', ('completion/complete', {'ref': {'type': 'ref/resource', 'uri': 'qmd://{+path}'}, 'argument': {'name': 'path', 'value': 'vault7/'}}), 'read', False),
                ('prompt', ('prompts/get', {'name': 'query'}), 'read', False),
                ('query_experiences', call('query_experiences', {'keywords': 'rsync plans'}), 'read', True),
                ('submit_experience', call('submit_experience', {'title': 'probe', 'problem_description': 'p', 'solution': 's'}), 'write', True),
                ('searchDocuments', call('searchDocuments', {'query': 'rsync plans', 'filters': {'searchMode': 'exact'}}), 'read', False),
                ('ldims-resource', ('resources/read', {'uri': f"ldims://docs/{w['vault_uuid']}/extracted_content"}), 'read', False)],
        'vectordb': [('tools/list', ('tools/list', {}), 'read', False), ('search', call('search', {'query': 'rsync plans'}), 'read', False),
                     ('search-vault', call('search', {'query': 'rsync', 'library': 'vault7'}), 'read', False),
                     ('list_documents', call('list_documents', {}), 'read', False), ('list_libraries', call('list_libraries', {}), 'read', False),
                     ('get_document', call('get_document', {'doc_id': w['vault_uuid']}), 'read', False),
                     ('delete_document', call('delete_document', {'doc_id': w['vault_uuid']}), 'write', False),
                     ('ingest_url', call('ingest_url', {'url': 'http://127.0.0.1:9/x.html', 'library': 'vault7'}), 'write', False),
                     ('ingest_file-secret', call('ingest_file', {'path': str(w['srv']), 'library': 'publib'}), 'admin', False),
                     ('ingest_file-etc', call('ingest_file', {'path': '/etc/passwd', 'library': 'publib'}), 'admin', False),
                     ('ingest_file', call('ingest_file', {'path': str(w['allowed']/'memo.md'), 'library': 'publib'}), 'admin', False)],
        'mdq': [('tools/list', ('tools/list', {}), 'read', False), ('search', call('search', {'query': 'rsync plans'}), 'read', False),
                ('search-vault', call('search', {'query': 'rsync', 'source': 'vault7'}), 'read', False),
                ('read_page', call('read_page', {'path': f"{MARK['file']}.md", 'source': 'vault7'}), 'read', False),
                ('read_page-id', call('read_page', {'id': MARK['file']}), 'read', False),
                ('read_page-abs', call('read_page', {'path': str(w['vault']/f"{MARK['file']}.md")}), 'read', False)],
    }

def sample_args(tool) -> dict:
    "Arguments for a tool no probe above names: each required one, a plain value of its type."
    plain = {int: 1, 'integer': 1, float: 1.0, 'number': 1.0, bool: True, 'boolean': True, dict: {}, 'object': {}, list: [], 'array': []}
    return {p.name: plain.get(p.schema.get('type') if p.type is None else p.type, 'rsync plans') for p in tool.params if p.required or p.soft}

def every_tool_probed(w) -> dict:
    """`mcp_probes`, with a call of every tool of every served profile (`registry.PROFILES`) that it does not name: a tool
    added later is probed with every kind of token, for the scope `engine.auth.OPERATIONS` gives it."""
    from qmd_nb.profiles.registry import get_profile
    from qmd_nb.engine.auth import OPERATIONS, WHOLE_INDEX
    out = mcp_probes(w)
    for server, profiles in served().items():
        probes = out.setdefault(server, [('tools/list', ('tools/list', {}), 'read', False)])
        named = {m[1]['name']: (scope, whole) for _, m, scope, whole in probes if m[0] == 'tools/call'}
        for prof in profiles:
            for tool in get_profile(prof).tools:
                op = f'{prof}.{tool.name}'
                if tool.name in named: assert named[tool.name] == (OPERATIONS[op], op in WHOLE_INDEX), (op, named[tool.name]) # as the gate has it
                else: probes.append((tool.name, call(tool.name, sample_args(tool)), OPERATIONS[op], op in WHOLE_INDEX))
    return out

def test_every_tool_is_probed(world):
    "The probes cover every tool of every profile of the registry, on the server that serves it."
    from qmd_nb.profiles.registry import profile_tools, PROFILES
    probes = every_tool_probed(world)
    called = {(server, m[1]['name']) for server, ps in probes.items() for _, m, _, _ in ps if m[0] == 'tools/call'}
    assert {(server, t) for server, profiles in served().items() for p in profiles for t in profile_tools(p)} <= called
    assert sorted(p for ps in served().values() for p in ps) == sorted(PROFILES)

def probe_all(w, t, transport:str, ok:int) -> dict:
    "Every tool probe of every server, for each kind of token, over `transport` ('mcp' or 'sse'), each status checked (`ok` where the gate lets it pass); (server, kind, probe) -> the answer's body."
    plan, meta = [], []
    for server, probes in every_tool_probed(w).items():
        for kind in TOKEN_KINDS:
            plan.append(dict(kind=transport, port=w['ports'][server], token=w['tok'][kind], messages=[m for _, m, _, _ in probes]))
            meta.append((server, kind, [('initialize', None, 'read', False), *probes]))
    seen = {}
    for (server, kind, probes), results in zip(meta, attack(w, plan)):
        for (name, _, scope, whole), r in zip(probes, results):
            seen[server, kind, name] = r['body']
            want = gate_status(kind, scope, whole) or ok
            t.check(w, kind, f'{transport}:{server}:{name}', r['msg'], r['status'], want, r['body'])
            if want == 401: assert r['headers'].get('www-authenticate', '').startswith('Bearer realm="qmd-nb"'), r['headers']
            if want == 403: assert 'insufficient_scope' in r['headers'].get('www-authenticate', ''), r['headers']
            if transport == 'mcp' and name == 'initialize' and want == 200: assert r['headers'].get('mcp-session-id'), r
    return seen

def test_mcp_tools_resources_prompts_of_every_profile(world):
    w, t = world, Tally('MCP messages x profiles x tokens')
    seen = probe_all(w, t, 'mcp', 200)
    for server in ('qmd', 'vectordb', 'mdq'): # the tools answered with data: the unlimited token's answers name the private collection
        assert 'vault7' in seen[server, 'read', 'search'] and leaks(w, 'read-pub', {}, seen[server, 'read', 'search']), seen[server, 'read', 'search'][:500]
        assert MARK['pub'] in seen[server, 'read-pub', 'search'] or 'pub' in seen[server, 'read-pub', 'search']
    assert 'vault7' in seen['mdq', 'read', 'tools/list'] and 'vault7' not in seen['mdq', 'read-pub', 'tools/list'] # mdq names its sources in the descriptions
    assert MARK['exp'] in seen['qmd', 'read', 'query_experiences']
    t.done()

def test_mcp_over_sse_with_every_kind_of_token(world):
    "The probes above over MCP's SSE transport (GET /sse, POST /messages/): the same refusals, no leaks; what /mcp answers 200 is 202, its answer on the stream."
    w, t = world, Tally('MCP over SSE x profiles x tokens')
    seen = probe_all(w, t, 'sse', 202)
    for server in ('qmd', 'vectordb', 'mdq'): # the answers came off the stream, with data: the unlimited token's name the private collection
        assert 'vault7' in seen[server, 'read', 'search'] and leaks(w, 'read-pub', {}, seen[server, 'read', 'search']), seen[server, 'read', 'search'][:500]
    assert 'vault7' not in seen['mdq', 'read-pub', 'tools/list']
    t.done()

def test_sse_sessions_are_bound_to_their_token(world):
    "A session opened over SSE with one token cannot be posted to with another: 404 (as for no session), 401 without a token."
    w, t = world, Tally('SSE session reuse')
    port = w['ports']['qmd']
    with httpx.Client(base_url=f'http://127.0.0.1:{port}', timeout=30) as c, c.stream('GET', '/sse', headers={'Authorization': f"Bearer {w['tok']['admin']}"}) as r:
        path = next(l[5:].strip() for l in r.iter_lines() if l.startswith('data:'))
        m = {'jsonrpc': '2.0', 'id': 1, 'method': 'tools/call', 'params': {'name': 'search', 'arguments': {'query': 'rsync plans'}}}
        for kind, want in (('read', 404), ('read-pub', 404), ('admin-pub', 404), ('none', 401), ('garbage', 401)):
            h = {'Authorization': f"Bearer {w['tok'][kind]}"} if w['tok'][kind] else {}
            res = attack(w, [dict(kind='http', port=port, method='POST', path=path, body=m, headers=h)])[0]
            t.check(w, kind, 'reuse-admin-sse-session', m, res['status'], want, res['body'])
    t.done()

def test_sessions_are_bound_to_their_token(world):
    "A session opened with one token cannot be used with another (the SDK answers as if it did not exist)."
    w, t = world, Tally('MCP session reuse')
    port, hdr = w['ports']['qmd'], {'Accept': 'application/json, text/event-stream'}
    init = {'jsonrpc': '2.0', 'id': 0, 'method': 'initialize', 'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'owner', 'version': '1'}}}
    r = httpx.post(f'http://127.0.0.1:{port}/mcp', json=init, headers={**hdr, 'Authorization': f"Bearer {w['tok']['admin']}"})
    sid = r.headers['mcp-session-id']
    m = {'jsonrpc': '2.0', 'id': 1, 'method': 'tools/call', 'params': {'name': 'search', 'arguments': {'query': 'rsync plans'}}}
    for kind, want in (('read', 404), ('read-pub', {400, 404}), ('none', 401)):
        h = {**hdr, 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18', **({'Authorization': f"Bearer {w['tok'][kind]}"} if w['tok'][kind] else {})}
        res = attack(w, [dict(kind='http', port=port, method='POST', path='/mcp', body=m, headers=h)])[0]
        t.check(w, kind, 'reuse-admin-session', m, res['status'], want, res['body'])
    t.done()

# -- the issue's probes: Host, Origin, CORS, content types, brute force, rate limits, live revocation ------------------------

def test_headers_cors_and_forms(world):
    w, t = world, Tally('Host/Origin/CORS probes')
    port, adm = w['ports']['qmd'], {'Authorization': f"Bearer {w['tok']['admin']}"}
    q = {'query': 'rsync plans'}
    probes = [
        ('host-prefix-trick', 'POST', '/search', q, {**adm, 'Host': 'localhost:evil.example'}, 421),
        ('host-foreign', 'POST', '/search', q, {**adm, 'Host': 'evil.example'}, 421),
        ('host-userinfo', 'POST', '/search', q, {**adm, 'Host': 'localhost@evil.example'}, 421),
        ('host-ok', 'POST', '/search', q, {**adm, 'Host': f'localhost:{port}'}, 200),
        ('origin-userinfo-trick', 'POST', '/search', q, {**adm, 'Origin': 'http://localhost:1@evil.example'}, 403),
        ('origin-prefix-trick', 'POST', '/search', q, {**adm, 'Origin': 'http://localhost.evil.example'}, 403),
        ('origin-foreign', 'POST', '/search', q, {**adm, 'Origin': 'https://evil.example'}, 403),
        ('origin-null', 'POST', '/search', q, {**adm, 'Origin': 'null'}, 403),
        ('origin-allowed', 'POST', '/search', q, {**adm, 'Origin': 'https://app.example'}, 200),
        ('mcp-host-trick', 'POST', '/mcp', {'jsonrpc': '2.0', 'id': 1, 'method': 'ping'}, {**adm, 'Host': 'localhost:evil.example', 'Accept': 'application/json, text/event-stream'}, 421),
        ('preflight-allowed', 'OPTIONS', '/search', None, {'Origin': 'https://app.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization, content-type'}, 204),
        ('preflight-mcp', 'OPTIONS', '/mcp', None, {'Origin': 'https://app.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization, content-type, mcp-session-id, mcp-protocol-version'}, 204),
        ('preflight-foreign', 'OPTIONS', '/search', None, {'Origin': 'https://evil.example', 'Access-Control-Request-Method': 'POST'}, 403),
        ('form-post', 'POST', '/search', 'query=rsync', {**adm, 'Content-Type': 'application/x-www-form-urlencoded'}, 415),
        ('text-post', 'POST', '/collections/add', '{"name": "etc", "path": "/etc"}', {**adm, 'Content-Type': 'text/plain'}, 415),
        ('basic-auth', 'POST', '/search', q, {'Authorization': 'Basic YWRtaW46YWRtaW4='}, 401),
        ('token-in-query', 'POST', f"/search?access_token={w['tok']['admin']}", q, {}, 401),
        ('bearer-empty', 'POST', '/search', q, {'Authorization': 'Bearer '}, 401),
        ('no-auth-collections-add', 'POST', '/collections/add', {'name': 'etc', 'path': '/etc', 'glob_pattern': 'passwd,shadow'}, {}, 401),
        ('no-auth-ingest', 'POST', '/ingest', {'source': str(w['srv']), 'library': 'x'}, {}, 401),
        ('sse-no-token', 'GET', '/sse', None, {}, 401),
        ('sse-messages-no-token', 'POST', '/messages/?session_id=' + 'a' * 32, {'jsonrpc': '2.0', 'id': 1, 'method': 'ping'}, {}, 401),
        ('sse-host-trick', 'GET', '/sse', None, {**adm, 'Host': 'localhost:evil.example'}, 421),
        ('sse-origin-foreign', 'GET', '/sse', None, {**adm, 'Origin': 'https://evil.example'}, 403),
        ('sse-messages-form', 'POST', '/messages/?session_id=' + 'a' * 32, 'x=1', {**adm, 'Content-Type': 'application/x-www-form-urlencoded'}, 415),
        ('sse-messages-no-session', 'POST', '/messages/?session_id=' + 'a' * 32, {'jsonrpc': '2.0', 'id': 1, 'method': 'ping'}, adm, 404),
    ]
    res = attack(w, [dict(kind='http', port=port, method=m, path=p, body=b, headers=h) for _, m, p, b, h, _ in probes])
    for (name, m, p, b, h, want), r in zip(probes, res):
        t.check(w, 'admin' if h.get('Authorization', '').startswith('Bearer qmdnb_') else 'none', name, {'path': p, 'body': b}, r['status'], want, r['body'])
        cors = r['headers'].get('access-control-allow-origin')
        if name.startswith('preflight-allowed') or name == 'preflight-mcp':
            assert cors == 'https://app.example' and 'authorization' in r['headers']['access-control-allow-headers'], r['headers']
        elif name == 'origin-allowed': assert cors == 'https://app.example' and 'mcp-session-id' in r['headers']['access-control-expose-headers']
        else: assert cors is None, (name, r['headers'])
    t.done()

def test_oauth_endpoints_resist_guessing_and_floods(world):
    "An anonymous local user can register a client and start an authorization, but cannot guess the approval code, and floods are slowed."
    w, t = world, Tally('OAuth probes')
    port = w['ports']['mdq'] # its own rate-limit buckets
    cb = 'http://127.0.0.1:9/cb'
    reg = attack(w, [dict(kind='http', port=port, method='POST', path='/register', body={'client_name': 'evil', 'redirect_uris': [cb], 'token_endpoint_auth_method': 'none'})])[0]
    t.check(w, 'none', 'register', {}, reg['status'], 201, reg['body'])
    cid = json.loads(reg['body'])['client_id']
    q = f"/authorize?response_type=code&client_id={cid}&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&state=s&code_challenge={'A' * 43}&code_challenge_method=S256&scope=admin"
    a = attack(w, [dict(kind='http', port=port, method='GET', path=q)])[0]
    t.check(w, 'none', 'authorize', {}, a['status'], 302, a['body'])
    rid = a['headers']['location'].split('request=')[1]
    guesses = [dict(kind='http', port=port, method='POST', path='/oauth/consent', body=f'request={rid}&secret={n:08d}&scope=admin&action=approve',
                    headers={'Content-Type': 'application/x-www-form-urlencoded'}) for n in range(6)]
    res = attack(w, guesses)
    for i, r in enumerate(res): t.check(w, 'none', f'guess-{i}', {}, r['status'], 403 if i < 5 else 400, r['body']) # five tries, then the request is gone
    assert 'cancelled' in res[4]['body'] and 'expired or is unknown' in res[5]['body']
    others = [dict(kind='http', port=port, method='POST', path='/register', body={'client_name': 'x', 'redirect_uris': ['http://evil.example/cb']})] \
           + [dict(kind='http', port=port, method='POST', path='/token', body='grant_type=authorization_code&code=x&client_id=nope&code_verifier=' + 'a' * 50,
                   headers={'Content-Type': 'application/x-www-form-urlencoded'}) for _ in range(35)]
    res = attack(w, others)
    t.check(w, 'none', 'register-evil-redirect', {}, res[0]['status'], 400, res[0]['body'])
    codes = [r['status'] for r in res[1:]]
    t.n += len(codes)
    assert set(codes) <= {401, 429} and 429 in codes and codes.index(429) >= 29, codes # 30 a minute, then Retry-After
    assert all(r['headers'].get('retry-after') for r in res[1:] if r['status'] == 429)
    t.done()

def test_forwarded_headers_do_not_choose_the_client(world):
    "A local user's X-Forwarded-For (uvicorn believes it from 127.0.0.1 by default) does not pick the address a rate limit counts: 35 revocations from 35 claimed addresses are one client's."
    port = world['ports']['vectordb'] # its own rate-limit buckets
    flood = [dict(kind='http', port=port, method='POST', path='/revoke', body='token=x&client_id=nope',
                  headers={'Content-Type': 'application/x-www-form-urlencoded', 'X-Forwarded-For': f'10.0.0.{i + 1}', 'Forwarded': f'for=10.1.0.{i + 1}'}) for i in range(35)]
    codes = [r['status'] for r in attack(world, flood)]
    assert 429 in codes and codes.index(429) >= 29, codes # /revoke takes 30 a minute from one client

def test_the_server_takes_all_the_files_it_may_open(qmd, notes):
    "Started with the common soft limit of 1,024 open files, `serve` raises its own to the hard limit: another user's idle connections take one each."
    import resource
    from test_rest import free_port
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard <= 1024: pytest.skip(f"the hard limit here is {hard}")
    port = free_port()
    p = subprocess.Popen([QMD_BIN, 'serve', '--transport', 'http', '--port', str(port)], env=qmd.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard)))
    try:
        t0 = time.time()
        while time.time() - t0 < 60:
            try:
                if httpx.get(f'http://127.0.0.1:{port}/health', timeout=1).status_code == 200: break
            except httpx.TransportError: time.sleep(0.1)
        line = next(l for l in Path(f'/proc/{p.pid}/limits').read_text(encoding='utf-8').splitlines() if l.startswith('Max open files'))
        want = 'unlimited' if hard == resource.RLIM_INFINITY else str(hard)
        assert line.split()[3] == want, line
    finally: p.terminate(); p.wait(30)

HOARDER = r"""
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
for _ in range(int(sys.argv[3]) if len(sys.argv) > 3 else 0): # first: WebSocket upgrades, each answered and closed
    with socket.create_connection(('127.0.0.1', port)) as u:
        u.sendall(b'GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n'
                  b'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'); u.recv(4096)
conns = [socket.create_connection(('127.0.0.1', port)) for _ in range(n)]
time.sleep(2)
alive = 0
for c in conns: # a connection the server closed reads as b''
    c.setblocking(False)
    try: alive += c.recv(1, socket.MSG_PEEK) != b''
    except BlockingIOError: alive += 1
    except ConnectionResetError: pass
print(alive, flush=True); sys.stdin.read() # holds them until told
"""

def _hoard(box:Path, port:int, n:int, user:str|None=None, upgrades:int=0):
    "Open `n` idle connections to `port` (as `user`, else as the owner; after `upgrades` WebSocket upgrade requests): the holding process, and how many the server kept after 2 s."
    (box/'hoarder.py').write_text(HOARDER, encoding='utf-8'); (box/'hoarder.py').chmod(0o644)
    cmd = f"/usr/bin/python3 {box/'hoarder.py'} {port} {n} {upgrades}"
    p = subprocess.Popen(['su', user, '-s', '/bin/sh', '-c', cmd] if user else ['/bin/sh', '-c', cmd],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8')
    line = p.stdout.readline()
    if not line.strip().isdigit(): p.kill(); raise AssertionError(p.communicate()[1][-2000:])
    return p, int(line)

def test_another_users_connections_are_capped(world):
    "Another local user opens 600 idle connections: the server keeps 512 (CONNECTIONS_PER_CLIENT), closes the rest, says so, and still answers the owner, whose own 600 are all kept."
    from qmd_nb.serve.server import CONNECTIONS_PER_CLIENT
    port, box = world['ports']['mdq'], world['box']
    p, kept = _hoard(box, port, 600, 'nobody')
    try:
        assert kept == CONNECTIONS_PER_CLIENT, kept
        assert httpx.get(f'http://127.0.0.1:{port}/health', timeout=10).status_code == 200 # the owner is served meanwhile
        mine, kept = _hoard(box, port, 600); mine.communicate('', timeout=60)
        assert kept == 600, kept # the owner's own connections are not counted
    finally: p.communicate('', timeout=60)
    said = (world['base']/f'server-{port}.log').read_text(encoding='utf-8')
    assert f'Closing new connections of user nobody (uid 65534): it has {CONNECTIONS_PER_CLIENT} open' in said, said[-1000:]
    again, kept = _hoard(box, port, 5, 'nobody', upgrades=CONNECTIONS_PER_CLIENT + 8); again.communicate('', timeout=60)
    assert kept == 5, kept # closed ones were given back, WebSocket upgrades (refused: the server has no WebSocket routes) too
    said = (world['base']/f'server-{port}.log').read_text(encoding='utf-8')
    assert 'upgrade' not in said.lower(), said[-1000:] # and they print nothing: 520 of them would be 1,040 lines in the owner's terminal

def test_revocation_reaches_running_servers(world):
    w, t = world, Tally('revocation')
    tok = w['qmd']('token', 'create', '--scope', 'read', '--name', 'short-lived').stdout.strip()
    step = lambda port: dict(kind='http', port=port, method='POST', path='/search', body={'query': 'rsync plans'}, headers={'Authorization': f'Bearer {tok}'})
    before = attack(w, [step(w['ports']['qmd'])])
    w['qmd']('token', 'revoke', 'short-lived')
    after = attack(w, [step(w['ports']['qmd'])] + [dict(kind='mcp', port=w['ports'][s], token=tok, messages=[]) for s in ('vectordb', 'mdq')])
    t.check(w, 'read', 'before', {}, before[0]['status'], 200, before[0]['body'])
    t.check(w, 'revoked', 'after-rest', {}, after[0]['status'], 401, after[0]['body'])
    for r in after[1:]: t.check(w, 'revoked', 'after-mcp', {}, r[0]['status'], 401, r[0]['body'])
    t.done()

def test_a_limited_token_cannot_claim_another_collections_folder(world, tmp_path):
    "The owner allows a folder holding two collections; an admin token limited to one removes it and tries to add, or ingest from, the other's folder."
    from conftest import Qmd
    qmd = Qmd(tmp_path/'home')
    data = write_tree(tmp_path/'data', {'pub/p.md': '# Pub\n\npublic page\n', 'secret/s.md': f"# S\n\ntop secret {MARK['vault']}\n", 'spare/x.md': '# X\n\nspare\n'})
    qmd('collection', 'add', data/'pub', '--name', 'pub'); qmd('collection', 'add', data/'secret', '--name', 'secret')
    tok = qmd('token', 'create', '--scope', 'admin', '--collections', 'pub', '--name', 'apub').stdout.strip()
    proc, port = _serve(qmd, '--allow-path', data)
    try:
        h = {'Authorization': f'Bearer {tok}'}
        step = lambda method, path, body=None: dict(kind='http', port=port, method=method, path=path, body=body, headers=h)
        got = attack(world, [step('DELETE', '/collections/pub'),
                             step('POST', '/collections/add', {'name': 'pub', 'path': str(data/'secret')}),
                             step('POST', '/collections/add', {'name': 'pub', 'path': str(data)}), # around it: would index it too
                             step('POST', '/ingest', {'source': str(data/'secret'/'s.md'), 'library': 'pub'}),
                             step('POST', '/collections/add', {'name': 'pub', 'path': str(data/'spare')}), # a folder of its own: fine
                             step('POST', '/get', {'file': 'pub/s.md'}), step('POST', '/search', {'query': 'secret'})])
        assert [r['status'] for r in got] == [200, 400, 403, 404, 200, 404, 200], [(r['status'], r['body'][:200]) for r in got]
        assert all(MARK['vault'] not in r['body'] for r in got), [r['body'][:200] for r in got]
        assert 'Not a folder' in got[1]['body'] and 'File not found' in got[3]['body'], got # as a missing folder or file: where `secret` lies is not told
        probe = attack(world, [step('POST', '/ingest', {'source': str(data/'secret'/'nope.md'), 'library': 'pub'}), step('POST', '/ingest', {'source': str(data/'spare'/'nope.md'), 'library': 'pub'})])
        assert [(r['status'], json.loads(r['body'])['detail'].split(':')[0]) for r in probe] == [(404, 'File not found')] * 2, probe # the same for either folder
        probe = attack(world, [step('POST', '/collections/add', {'name': 'pub2', 'path': str(data/'secret'/'nope')}), step('POST', '/collections/add', {'name': 'pub2', 'path': str(data/'spare'/'nope')})])
        assert [(r['status'], json.loads(r['body'])['detail'].split(':')[0]) for r in probe] == [(400, 'Not a folder')] * 2, probe
    finally: proc.terminate(); proc.wait(30)

# -- files ----------------------------------------------------------------------------------------------------------------

def test_index_files_are_the_owners_alone(world):
    "Every file qmd-nb wrote (catalog, WAL, keyword and vector stores, ingested copies, tokens, config, job records) is 0600 in 0700 folders; nobody reads none."
    w, t = world, Tally('files as nobody')
    home = w['home']
    files = [p for p in home.rglob('*')]
    assert any(p.name == 'catalog.sqlite' for p in files) and any('libraries' in p.parts for p in files) and (home/'config'/'tokens.json').exists()
    assert any(p.name == 'chroma.sqlite3' for p in files), sorted(str(p.relative_to(home)) for p in files) # the vector store's
    wide = [f"{oct(p.stat().st_mode & 0o777)} {p}" for p in [home, *files] if not p.is_symlink() and p.stat().st_mode & 0o077]
    assert not wide, wide[:20]
    targets = [home/'cache'/'index'/'catalog.sqlite', home/'config'/'tokens.json', home/'config'/'token', home/'config'/'index.json',
               next(p for p in files if 'libraries' in p.parts and p.is_file()), home/'cache', home/'config', w['srv']]
    for p, r in zip(targets, attack(w, [dict(kind='file', path=str(p)) for p in targets])):
        t.check(w, 'none', f'read {p.relative_to(w["base"])}', {}, r['status'], 'EACCES', r['body'])
    t.done()

def test_no_auth_is_loopback_only(world):
    r = world['qmd']('serve', '--no-auth', '--host', '0.0.0.0', '--port', '1', ok=False)
    assert r.returncode == 1 and '--no-auth serves only on a loopback address' in r.stderr

def test_zz_totals():
    print(f"\nsecurity probes: {TOTALS['probes']} probes, {TOTALS['leaks']} leaks")
    assert TOTALS['probes'] > 500 and TOTALS['leaks'] == 0

def test_https(qmd, notes, tmp_path):
    "--cert/--key serve HTTPS; OAuth then runs off loopback too, with an https issuer."
    from test_rest import free_port
    qmd('collection', 'add', notes, '--name', 'notes')
    cert, key = tmp_path/'cert.pem', tmp_path/'key.pem'
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert],
                   check=True, capture_output=True)
    port = free_port()
    p = subprocess.Popen([QMD_BIN, 'serve', '--port', str(port), '--cert', cert, '--key', key, '--client-timeout', '3'], env=qmd.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url, ca = f'https://127.0.0.1:{port}', __import__('ssl').create_default_context(cafile=str(cert))
        for _ in range(300):
            try: httpx.get(url + '/health', verify=ca); break
            except httpx.TransportError: time.sleep(0.1)
        token = (qmd.home/'config'/'token').read_text(encoding='utf-8').strip()
        r = httpx.post(url + '/search', json={'query': 'rsync'}, headers={'Authorization': f'Bearer {token}'}, verify=ca)
        assert r.status_code == 200 and r.json()['results'][0]['file'] == 'notes/backup.md'
        assert httpx.get(url + '/.well-known/oauth-authorization-server', verify=ca).json()['issuer'] == url
        with pytest.raises(httpx.TransportError): httpx.get(f'http://127.0.0.1:{port}/health') # no plain HTTP on that port
        import socket
        with ca.wrap_socket(socket.create_connection(('127.0.0.1', port)), server_hostname='127.0.0.1') as idle: # a handshake, then nothing
            t0 = time.monotonic(); idle.settimeout(60)
            with socket.socket(fileno=os.dup(idle.fileno())) as raw: # the TCP connection under it: read to its end (the server's FIN)
                raw.settimeout(60)
                while raw.recv(4096): pass # (the server's close_notify first, which this client never answers)
            assert time.monotonic() - t0 < 10, time.monotonic() - t0 # closed after --client-timeout, not after asyncio's 30 s wait for close_notify
        if os.geteuid() == 0 and shutil.which('su'): # another user's connections that never start their TLS handshake are counted too
            from qmd_nb.serve.server import CONNECTIONS_PER_CLIENT
            box = Path(tempfile.mkdtemp(prefix='qmd-nb-tls-')); box.chmod(0o755)
            held, kept = _hoard(box, port, CONNECTIONS_PER_CLIENT + 40, 'nobody')
            try:
                assert kept == CONNECTIONS_PER_CLIENT, kept
                assert httpx.get(url + '/health', verify=ca).status_code == 200
            finally: held.communicate('', timeout=60)
    finally:
        p.terminate(); p.wait(30)

def test_a_limited_token_cannot_read_another_librarys_metadata_through_a_copy(qmd, tmp_path):
    "The owner ingests a page with tags into `vault`; a token limited to `lib` ingests the same bytes: searching its copy for the owner's tags (or title) finds nothing (before, the copy shared the owner's stored terms and was found)."
    from test_rest import Server
    page = "# Plan\n\nThe merger closes on 3 March at 41 dollars a share.\n"
    mine = write_tree(tmp_path/'mine', {'plan.md': page}); drop = write_tree(tmp_path/'drop', {'plan.md': page})
    qmd('ingest', mine/'plan.md', '--library', 'vault', '--metadata', '{"tags": ["zebracorn"], "description": "quokkaville acquisition"}')
    tok = qmd('token', 'create', '--scope', 'admin', '--collections', 'lib', '--name', 'w').stdout.strip()
    s = Server(qmd, '--allow-path', drop)
    try:
        h = {'Authorization': f'Bearer {tok}'}
        r = s.post('/ingest', {'source': str(drop/'plan.md'), 'library': 'lib'}, headers=h)
        assert r.status_code == 200 and r.json()['status'] == 'indexed', r.text
        found = lambda q, hd: [x['file'] for x in s.post('/search', {'query': q, 'limit': 5}, headers=hd).json()['results']]
        assert found('merger dollars', h) == ['lib/plan.md'] # its own copy, by its own words
        for q in ('zebracorn', 'quokkaville', 'acquisition'): assert found(q, h) == [], (q, found(q, h)) # not by the owner's tags
        assert found('zebracorn', {}) == ['vault/plan.md'] # the owner's page keeps them (the server's own token)
    finally:
        code, _, err = s.stop()
        assert code == 0 and 'Traceback' not in err, err[-2000:]

def _as_an_older_version_left_it(home:Path, library:str):
    "Put the library's pages back under their bytes' hash, sharing the stored content (and its terms) of a folder's copy, as versions before `content_key` did."
    from qmd_nb.engine.store import Store, bump_generation
    from qmd_nb.engine.index import refresh_keyword
    st = Store(env={'QMD_NB_HOME': str(home)})
    with st.writing(), st.tx() as db:
        for i, key, h in db.execute("SELECT d.id, d.hash, i.hash FROM documents d JOIN ingested i ON i.library = d.collection AND i.path = d.path WHERE d.collection=?", (library,)).fetchall():
            db.execute("UPDATE content SET terms=(SELECT terms FROM content WHERE hash=?) WHERE hash=?", (key, h)) # the first writer's terms
            db.execute("UPDATE documents SET hash=? WHERE id=?", (h, i)); db.execute("DELETE FROM content WHERE hash=?", (key,))
            db.execute("INSERT INTO doc_log(doc_id) SELECT id FROM documents WHERE hash=?", (h,))
        db.execute("DELETE FROM kv WHERE key='ingested_keys'"); bump_generation(db)
    with st.writing(): refresh_keyword(st)
    st.close()

def test_an_older_index_is_rekeyed_when_the_server_starts(qmd, tmp_path):
    "An index as versions before `content_key` left it, where a folder's copy of an ingested page carried that page's tags: once the server has started, a token limited to the folder no longer finds its copy by them."
    from test_rest import Server
    page = "# Plan\n\nThe merger closes on 3 March at 41 dollars a share.\n"
    mine = write_tree(tmp_path/'mine', {'plan.md': page}); pub = write_tree(tmp_path/'pub', {'plan.md': page})
    qmd('ingest', mine/'plan.md', '--library', 'vault', '--metadata', '{"tags": ["zebracorn"]}'); qmd('collection', 'add', pub, '--name', 'pub')
    _as_an_older_version_left_it(qmd.home, 'vault')
    assert 'pub/plan.md' in qmd('search', 'zebracorn', '-c', 'pub').stdout # the leak as it was (a search writes nothing)
    tok = qmd('token', 'create', '--scope', 'read', '--collections', 'pub', '--name', 'r').stdout.strip()
    s = Server(qmd)
    try:
        h, end, waited = {'Authorization': f'Bearer {tok}'}, time.time() + 30, 0
        while (r := s.post('/search', {'query': 'zebracorn', 'limit': 5}, headers=h)).status_code == 503 and time.time() < end: # from its first answer on
            assert 'being upgraded' in r.json()['detail'] and 'plan' not in r.text, r.text; waited += 1; time.sleep(0.05)
        assert r.status_code == 200 and r.json()['results'] == [], r.text # never found by the tags, not even while the server moved the pages
        found = lambda q, h: [x['file'] for x in s.post('/search', {'query': q, 'limit': 5}, headers=h).json()['results']]
        assert found('merger dollars', h) == ['pub/plan.md']
        assert found('zebracorn', {}) == ['vault/plan.md']
        print(f'answers 503 while upgrading: {waited}')
    finally:
        code, _, err = s.stop()
        assert code == 0 and 'Traceback' not in err, err[-2000:]

def test_a_limited_token_is_not_served_from_an_older_read_only_index(qmd, tmp_path, mounts):
    "An index as versions before `content_key` left it, mounted read-only, cannot be upgraded: a token limited to the folder is told so (503, REST and MCP) rather than finding its copy by the library page's tags; the owner is served."
    from conftest import Qmd, mount
    from test_rest import Server, _mcp_http
    page = "# Plan\n\nThe merger closes on 3 March at 41 dollars a share.\n"
    mine = write_tree(tmp_path/'mine', {'plan.md': page}); pub = write_tree(tmp_path/'pub', {'plan.md': page})
    qmd('ingest', mine/'plan.md', '--library', 'vault', '--metadata', '{"tags": ["zebracorn"]}'); qmd('collection', 'add', pub, '--name', 'pub')
    _as_an_older_version_left_it(qmd.home, 'vault')
    tok = qmd('token', 'create', '--scope', 'read', '--collections', 'pub', '--name', 'r').stdout.strip(); qmd('mcp-config') # (the server's own token)
    ro = tmp_path/'ro'; ro.mkdir()
    if not mount('--bind', '-o', 'ro', qmd.home, ro): pytest.skip('needs root to bind-mount read-only')
    mounts.append(ro)
    s = Server(Qmd(ro))
    try:
        for path, body in [('/search', {'query': 'zebracorn'}), ('/query', {'query': 'zebracorn'}), ('/status', None)]:
            r = s.post(path, body, headers={'Authorization': f'Bearer {tok}'}) if body else s.get(path, headers={'Authorization': f'Bearer {tok}'})
            assert r.status_code == 503 and "runs 'qmd-nb update'" in r.json()['detail'] and 'plan' not in r.text, (path, r.text)
        class As: url, token = s.url, tok
        try: said = repr(asyncio.run(_mcp_http(As, lambda c: c.call_tool('search', {'query': 'zebracorn'}))))
        except ExceptionGroup as e: said = repr(e) # the SDK's client raises the JSON-RPC error it was answered
        assert "runs 'qmd-nb update'" in said and 'plan' not in said, said
        assert {x['file'] for x in s.post('/search', {'query': 'zebracorn'}).json()['results']} >= {'vault/plan.md'} # the owner is served
    finally:
        code, _, err = s.stop()
        assert code == 0 and 'Traceback' not in err, err[-2000:]

def test_a_limited_token_cannot_confirm_a_guessed_page(qmd, tmp_path):
    "A token limited to `pub` ingests exactly the text of a `vault` page it may not see, then a new text: `status` and `vsearch` answer alike for both (a text is embedded once for the whole index; before, the guess was embedded at once)."
    from test_rest import Server
    vault = write_tree(tmp_path/'vault', {'plan.md': "# Plan\n\nThe merger with Acme closes on 3 March at 41 dollars a share.\n"})
    pub = write_tree(tmp_path/'pub', {'a.md': '# A\n\nrsync notes for the nightly backup\n'})
    drop = write_tree(tmp_path/'drop', {'guess.md': (vault/'plan.md').read_text(encoding='utf-8'),
                                        'fresh.md': "# Fresh\n\nThe merger with Initech closes on 4 April at 12 dollars a share.\n"})
    qmd('collection', 'add', vault, '--name', 'vault'); qmd('collection', 'add', pub, '--name', 'pub'); qmd('embed')
    tok = qmd('token', 'create', '--scope', 'admin', '--collections', 'pub,lib', '--name', 'w').stdout.strip() # (files: admin; URLs: write)
    s = Server(qmd, '--allow-path', drop)
    try:
        h = {'Authorization': f'Bearer {tok}'}
        waiting = lambda: s.get('/status', headers=h).json()['needs_embedding']
        found = lambda: [r['file'] for r in s.post('/vsearch', {'query': 'merger closes dollars a share', 'limit': 5}, headers=h).json()['results']]
        before = waiting()
        for name in ('guess.md', 'fresh.md'):
            r = s.post('/ingest', {'source': str(drop/name), 'library': 'lib'}, headers=h)
            assert r.status_code == 200 and r.json()['status'] == 'indexed', r.text
            assert waiting() == before + 1, (name, waiting(), before) # one more to embed, whether another collection holds the text or not
            assert not [f for f in found() if f.startswith('lib/')], (name, found()) # and not found by meaning before an embed
            before = waiting()
        qmd('embed')
        assert waiting() == 0 and sorted(f for f in found() if f.startswith('lib/')) == ['lib/fresh.md', 'lib/guess.md'], found()
    finally:
        code, _, err = s.stop()
        assert code == 0 and 'Traceback' not in err, err[-2000:]
