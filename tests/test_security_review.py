"""A security review of the HTTP server (issue 13 as landed), one regression test per finding. The server runs as root
(the owner), the attacker as `nobody` over real sockets, as in test_security.py; each test names the finding it pins:

1. qmd-nb's own folders (tokens, catalog, copies) were served under `--allow-path ~`: a collection-limited admin token
   could add `~/.config/qmd-nb` as a collection and read the unlimited default token.
2. Rate limits keyed by client address: a local user sends from any of 127.0.0.0/8, so there was no limit, and
   approval codes (8 digits, 5 tries per request, any number of requests) could be guessed at ~300 a second.
3. BM25 statistics of the whole index: a word of a hidden collection changed a limited token's scores.
4. `tools/list` showed every tool to every token.
5. A token folder that another user owns (or may write) was used: they could plant their own tokens.
6. Client registration stored any amount of metadata in tokens.json (2 MB per request).
7. A replayed authorization code or replaced refresh token did not end the grant (OAuth 2.1 says it should).
8. An MCP body nested deeper than Python's recursion limit was a 500 (the gate's parser crashed); the gate now answers
   what it cannot read itself.
9. Repeated Host/Origin/Authorization headers: the gate read the last, Starlette the first.
10. Two processes making the default token at once could leave a revoked one in the token file.
11. A folder swapped for a link after it was checked: a collection's folder replaced by a link to a root-only folder
    made that folder an allowed root (roots were resolved again at every check), and `update` (the owner's too)
    indexed what the link led to into a collection the attacker's token may read.
12. A file confined when an ingest request came, swapped for a link to a root-only file while the request waited in the
    write queue (or a background job started): the queue read what the link led to into a library the token may read.
13. `search --server URL` sent the default (unlimited admin) token to a server on another machine.
14. A tool missing from the scope table would pass as the generic 'mcp' operation (McpDoor now refuses to start).
15. `update` lists a folder's files, then reads the changed ones by path: a file swapped for a link leading out of the
    folder in between was read into the collection (a FIFO swapped in hung the update, and the write queue with it).
A second review (helper probe of every door with collection-limited tokens) found three more:

16. An OAuth grant outlived the admin token that approved it: a token expiring in an hour (or revoked) could approve a
    grant of 30 days, renewed at every refresh.
17. With `--watch`, `status` showed a collection-limited token the watcher's figures over the whole index: how many
    documents changed in other collections, how many batches, and when.
18. The MCP `initialize` instructions told a collection-limited token how many experience records (`recall`) there are,
    data it may not read.
A third review (resource use by limited tokens):

19. A write token set a context of any size (7 MB, repeated in every result: 1.4 GB for one search) and any number of them.
20. multi_get took the same file any number of times with no bound on the reply (100 copies of 7 MB: 667 MB).
21. One MCP session cap (10,000) for every token of a scope and collections: one read token locked the others out.
22. A client that stopped reading a reply held it (and its connection) forever; no client was limited in requests at once,
    so one token's event streams took every socket and its queries every worker thread.
23. The ldims log wrote C1 control characters of a client's query raw to the owner's terminal.
A fourth review (what one local user can deny another):

24. 20 `/authorize` calls of another local user's client pushed the owner's waiting consent request out (the oldest went).
25. A read token's searches with many excluded phrases (a 2,000-character query, limit 1000) went on for minutes after
    their 503: each candidate's text was tokenised once per phrase, with no look at the time limit, and 32 such threads
    held the interpreter, so another token's `/status` failed for 10 minutes after a one-minute flood.
The counts of probes and leaks are printed."""
import json, os, re, shutil, subprocess, tempfile, time, hashlib, base64, secrets, concurrent.futures as cf
from pathlib import Path
import httpx, pytest
from conftest import QMD_BIN, ATTACKER_LIB, Qmd, write_tree

if os.geteuid() != 0 or shutil.which('su') is None: pytest.skip("needs root (to run the attacker as nobody)", allow_module_level=True)

SECRET_WORD, VAULT_MARK = 'zanzibarword', 'ZQX-SECRET-7731'
TOTALS = {'probes': 0, 'leaks': 0}

# the attacker's client: the system Python, standard library only, run as nobody
ATTACKER = ATTACKER_LIB + r'''
plan = json.load(open(sys.argv[1]))

def send(s): return request(s['port'], s['method'], s['path'], s.get('body'), s.get('headers'), 120, s.get('src', '127.0.0.1'))

def raw(s):
    "Send bytes as they are (repeated headers, upgrades); the status line and body of the answer."
    k = socket.create_connection(('127.0.0.1', s['port']), timeout=30); k.sendall(s['data'].encode())
    out = b''
    try:
        while (b := k.recv(65536)): out += b
    except OSError: pass
    k.close()
    head, _, body = out.partition(b'\r\n\r\n')
    status = int(head.split(b' ')[1]) if head.startswith(b'HTTP/') else -1
    return dict(status=status, headers={}, body=body.decode('utf-8', 'replace'))

def mcp(s): return mcp_session(s['port'], s['token'], s['messages'])[1:]

def init(s): return mcp_session(s['port'], s['token'], [])[0] # the initialize answer (server instructions)

def par(s):
    "Send the steps all at once (each on its own connection): they wait in the server's write queue together."
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(len(s['steps'])) as ex: return list(ex.map(send, s['steps']))

json.dump([{'http': send, 'raw': raw, 'mcp': mcp, 'init': init, 'par': par}[s['kind']](s) for s in plan], sys.stdout)
'''

def attack(w, plan:list) -> list:
    "Run the plan as nobody; one result per step."
    (w['box']/'plan.json').write_text(json.dumps(plan), encoding='utf-8'); (w['box']/'plan.json').chmod(0o644)
    r = subprocess.run(['su', 'nobody', '-s', '/bin/sh', '-c', f"/usr/bin/python3 {w['box']/'attacker.py'} {w['box']/'plan.json'}"],
                       capture_output=True, text=True, encoding='utf-8', timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)

class Tally:
    "Probes, wrong statuses and leaks (a forbidden string in an answer), printed and asserted at the end."
    def __init__(self, name, forbidden=()): self.name, self.forbidden, self.n, self.wrong, self.leaked = name, list(forbidden), 0, [], []
    def check(self, what, status, want, answer='', forbidden=()):
        self.n += 1
        if status != want: self.wrong.append((what, status, want, answer[:300]))
        if (lk := [f for f in [*self.forbidden, *forbidden] if f and f in answer]): self.leaked.append((what, lk, answer[:300]))
    def done(self):
        TOTALS['probes'] += self.n; TOTALS['leaks'] += len(self.leaked)
        print(f"\n{self.name}: {self.n} probes, {len(self.leaked)} leaks, {len(self.wrong)} wrong statuses")
        for x in self.leaked + self.wrong: print('  ', x)
        assert not self.leaked and not self.wrong, (self.leaked + self.wrong)[:5]

def _serve(qmd, *args):
    from test_rest import free_port
    port = free_port()
    log = qmd.home.parent/f'server-{port}.log'
    p = subprocess.Popen([QMD_BIN, 'serve', '--transport', 'http', '--port', str(port), *map(str, args)], env=qmd.env,
                         stdout=subprocess.DEVNULL, stderr=open(log, 'w', encoding='utf-8'))
    t0 = time.time()
    while True:
        try:
            if httpx.get(f'http://127.0.0.1:{port}/health', timeout=1).status_code == 200: return p, port, log
        except httpx.TransportError: pass
        assert p.poll() is None, log.read_text(encoding='utf-8')
        assert time.time() - t0 < 60, "server did not start"
        time.sleep(0.1)

@pytest.fixture(scope='module')
def world(tmp_path_factory):
    "An index with `pub` and a private `vault7`; the server allowed the folder that holds its own home (as `--allow-path ~`)."
    base = tmp_path_factory.mktemp('review')
    qmd = Qmd(base/'home')
    pub = write_tree(base/'pub', {'notes.md': "# Public notes\n\nrsync plans for the backups, alpha.\n", 'ops.md': "# Ops\n\nrsync nightly alpha beta.\n"})
    write_tree(base/'pub2', {'x.md': "# X\n\nrsync\n"})
    vault = write_tree(base/'vault7-data', {'plan.md': f"# Quetzalvault\n\nThe rsync plans of the vault. {SECRET_WORD} {VAULT_MARK}\n"})
    qmd('collection', 'add', pub, '--name', 'pub'); qmd('collection', 'add', vault, '--name', 'vault7')
    tok = {k: qmd('token', 'create', '--scope', k.split('-')[0], *(['--collections', 'pub,pubx,publib'] if k.endswith('-pub') else []), '--name', k).stdout.strip()
           for k in ('read', 'write', 'admin', 'read-pub', 'admin-pub')}
    area = Path(tempfile.mkdtemp(prefix='qmd-nb-area-')); area.chmod(0o755); os.chown(area, 65534, 65534) # a folder nobody may write, allowed too
    servers = {name: _serve(qmd, '--tools', tools, '--allow-path', base, '--allow-path', area) for name, tools in (('qmd', 'qmd,recall,ldims'), ('vectordb', 'vectordb'), ('oauth', 'qmd'))}
    (base/'link-to-config').symlink_to(base/'home'/'config')
    box = Path(tempfile.mkdtemp(prefix='qmd-nb-review-')); box.chmod(0o755)
    (box/'attacker.py').write_text(ATTACKER, encoding='utf-8'); (box/'attacker.py').chmod(0o644)
    default = (base/'home'/'config'/'token').read_text(encoding='utf-8').strip()
    w = dict(qmd=qmd, base=base, home=base/'home', tok=tok, box=box, default=default, area=area, ports={k: v[1] for k, v in servers.items()},
             logs={k: v[2] for k, v in servers.items()})
    yield w
    for p, _, _ in servers.values(): p.terminate(); p.wait(30)
    shutil.rmtree(box, ignore_errors=True); shutil.rmtree(area, ignore_errors=True)

def bearer(w, kind): return {'Authorization': f"Bearer {w['tok'][kind]}"}

# 1 ----------------------------------------------------------------------------------------------------------------------
def test_own_folders_are_never_served(world):
    "Finding 1: under an allowed folder that holds qmd-nb's home, its config and cache folders stay out of reach, for every admin."
    w = world; home = w['home']
    t = Tally("1. own folders", forbidden=[w['default'], *w['tok'].values(), '"hash"'])
    probes = [('config-as-collection', 'POST', '/collections/add', {'name': 'pubx', 'path': str(home/'config'), 'glob_pattern': 'token,*.json'}),
              ('home-as-collection', 'POST', '/collections/add', {'name': 'pubx', 'path': str(home), 'glob_pattern': '**/token'}),
              ('base-as-collection', 'POST', '/collections/add', {'name': 'pubx', 'path': str(w['base']), 'glob_pattern': '**/token'}), # holds the home
              ('link-to-config', 'POST', '/collections/add', {'name': 'pubx', 'path': str(w['base']/'link-to-config'), 'glob_pattern': '*'}),
              ('ingest-token', 'POST', '/ingest', {'source': str(home/'config'/'token'), 'library': 'publib'}),
              ('ingest-tokens-json', 'POST', '/ingest', {'source': str(w['base']/'link-to-config'/'tokens.json'), 'library': 'publib'}),
              ('ingest-catalog', 'POST', '/ingest', {'source': str(home/'cache'/'index'/'catalog.sqlite'), 'library': 'publib'})]
    plan = [dict(kind='http', port=w['ports']['qmd'], method=m, path=p, body=b, headers=bearer(w, k)) for k in ('admin-pub', 'admin') for _, m, p, b in probes]
    plan += [dict(kind='mcp', port=w['ports']['vectordb'], token=w['tok'][k], messages=[('tools/call', {'name': 'ingest_file', 'arguments': {'path': str(home/'config'/'token'), 'library': 'publib'}})])
             for k in ('admin-pub', 'admin')]
    plan += [dict(kind='http', port=w['ports']['qmd'], method='POST', path='/collections/add', headers=bearer(w, 'admin-pub'),
                  body={'name': 'pubx', 'path': str(w['base']/'pub2')})] # control: an ordinary folder under the allowed one
    res = attack(w, plan)
    for (k, (name, *_)), r in zip([(k, p) for k in ('admin-pub', 'admin') for p in probes], res):
        t.check(f'{k}:{name}', r['status'], 403, r['body'])
        if r['status'] == 403: assert "qmd-nb's own files" in r['body'], r['body']
    for k, r in zip(('admin-pub', 'admin'), res[len(probes) * 2:]):
        t.check(f'{k}:ingest_file-token', r[0]['status'], 200, r[0]['body'])
        assert "qmd-nb's own files" in r[0]['body'] and '"status":"error"' in r[0]['body'], r[0]['body'] # the mcpvectordb contract's error
    t.check('control', res[-1]['status'], 200, res[-1]['body'])
    w['qmd']('collection', 'remove', 'pubx')
    t.done()

# 2 ----------------------------------------------------------------------------------------------------------------------
def test_loopback_addresses_share_one_rate_limit(world):
    "Finding 2a: 35 requests to /token from 35 loopback addresses meet the limit of 30 a minute; the owner's own requests are counted apart."
    w, t = world, Tally("2a. rate limits")
    body = 'grant_type=authorization_code&code=x&client_id=nope&code_verifier=' + 'a' * 50
    res = attack(w, [dict(kind='http', port=w['ports']['vectordb'], method='POST', path='/token', src=f'127.0.{i // 200}.{i % 200 + 2}', body=body,
                          headers={'Content-Type': 'application/x-www-form-urlencoded'}) for i in range(35)])
    codes = [r['status'] for r in res]
    t.check('429 reached', 429 in codes, True, str(codes)); t.check('not before 30', codes.index(429) >= 29 if 429 in codes else False, True, str(codes))
    mine = httpx.post(f"http://127.0.0.1:{w['ports']['vectordb']}/token", content=body, headers={'Content-Type': 'application/x-www-form-urlencoded'})
    t.check("the owner's bucket is its own (another local user spent theirs)", mine.status_code != 429, True, f'{mine.status_code} {mine.text[-200:]}')
    t.done()

def test_approval_codes_share_one_budget(world):
    "Finding 2b: wrong approval codes from many addresses and requests pause approval by code; the right code then fails, an admin token works, and so does the owner's own browser (its own budget)."
    w, t = world, Tally("2b. approval codes")
    port, log = w['ports']['oauth'], w['logs']['oauth']
    cb = 'http://127.0.0.1:9/cb'
    reg = attack(w, [dict(kind='http', port=port, method='POST', path='/register', body={'client_name': 'evil', 'redirect_uris': [cb], 'token_endpoint_auth_method': 'none'})])[0]
    cid = json.loads(reg['body'])['client_id']
    q = f"/authorize?response_type=code&client_id={cid}&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&state=s&code_challenge={'A' * 43}&code_challenge_method=S256&scope=admin"
    form = {'Content-Type': 'application/x-www-form-urlencoded'}
    statuses = []
    for r in range(3): # three requests, five wrong codes each, each from its own address
        a = attack(w, [dict(kind='http', port=port, method='GET', path=q, src=f'127.1.{r}.2')])[0]
        rid = a['headers']['location'].split('request=')[1]
        res = attack(w, [dict(kind='http', port=port, method='POST', path='/oauth/consent', src=f'127.1.{r}.{i + 3}', headers=form,
                              body=f'request={rid}&secret=AAAA-AAA{"BCDEF"[i]}&scope=admin&action=approve') for i in range(5)])
        statuses += [x['status'] for x in res]
    t.check('wrong codes: 10 refused, then paused', statuses, [403] * 10 + [429] * 5, str(statuses))
    said = log.read_text(encoding='utf-8')
    t.check('the owner is told', 'approval by code is paused' in said, True, said[-500:])
    codes = re.findall(r'enter (\S+) on the page', said)
    t.check('codes of 40 bits', all(re.fullmatch(r'[A-Z2-9]{4}-[A-Z2-9]{4}', c) for c in codes) and len(codes) == 3, True, str(codes))
    a = attack(w, [dict(kind='http', port=port, method='GET', path=q, src='127.1.9.2')])[0] # a fourth request: the right code is not even tried
    rid = a['headers']['location'].split('request=')[1]
    code = re.findall(r'enter (\S+) on the page', log.read_text(encoding='utf-8'))[-1]
    right = attack(w, [dict(kind='http', port=port, method='POST', path='/oauth/consent', headers=form, body=f'request={rid}&secret={code}&scope=admin&action=approve')])[0]
    t.check('right code while paused', right['status'], 429, right['body'])
    ok = httpx.post(f'http://127.0.0.1:{port}/oauth/consent', data={'request': rid, 'secret': w['tok']['admin'], 'scope': 'read', 'action': 'approve'}, follow_redirects=False)
    t.check('admin token while paused', ok.status_code, 303, ok.text)
    mine = httpx.post(f'http://127.0.0.1:{port}/register', json={'client_name': 'mine', 'redirect_uris': [cb], 'token_endpoint_auth_method': 'none'}).json()['client_id']
    a = httpx.get(f'http://127.0.0.1:{port}' + q.replace(cid, mine), follow_redirects=False) # the owner's own browser: the server's user, on loopback
    rid, code = a.headers['location'].split('request=')[1], re.findall(r'enter (\S+) on the page', log.read_text(encoding='utf-8'))[-1]
    wrong = httpx.post(f'http://127.0.0.1:{port}/oauth/consent', data={'request': rid, 'secret': 'AAAA-AAAA', 'scope': 'read', 'action': 'approve'})
    t.check("the owner's wrong code: its own budget", (wrong.status_code, 'tries left' in wrong.text), (403, True), wrong.text[-300:])
    own = httpx.post(f'http://127.0.0.1:{port}/oauth/consent', data={'request': rid, 'secret': code, 'scope': 'read', 'action': 'approve'}, follow_redirects=False)
    t.check("the owner's right code while the others are paused", own.status_code, 303, own.text[-300:])
    t.done()

# 3 ----------------------------------------------------------------------------------------------------------------------
def test_limited_scores_do_not_feel_hidden_collections(world):
    "Finding 3: a word that only the hidden collection holds weighs, for a limited token, as a word no document holds (REST and MCP)."
    w, t = world, Tally("3. BM25 statistics")
    qs = ['rsync alpha', f'rsync alpha {SECRET_WORD}', 'rsync alpha nosuchwordxyz']
    plan = [dict(kind='http', port=w['ports']['qmd'], method='POST', path='/search', body={'query': q}, headers=bearer(w, k)) for k in ('read-pub', 'read') for q in qs]
    plan += [dict(kind='mcp', port=w['ports']['qmd'], token=w['tok']['read-pub'], messages=[('tools/call', {'name': 'search', 'arguments': {'query': q}}) for q in qs])]
    res = attack(w, plan)
    scores = lambda r: [(x['file'], x['score']) for x in json.loads(r['body'])['results']]
    lim, full, m = [scores(r) for r in res[:3]], [scores(r) for r in res[3:6]], res[6]
    # a query word no visible document holds lowers every score alike (rank's `exact_words`): the hidden word must count as such a word
    t.check('limited: the hidden word is an unknown word', lim[1], lim[2], str(lim)); t.check('limited: same documents, same order', [f for f, _ in lim[1]], [f for f, _ in lim[0]], str(lim))
    t.check('unlimited: the word is there (the probe can tell)', full[1] != full[0], True, str(full))
    mcp_scores = [[(x['file'], x['score']) for x in json.loads(r['body'])['result']['structuredContent']['results']] for r in m]
    t.check('MCP search alike', mcp_scores[1], mcp_scores[2], str(mcp_scores)); t.check('MCP as REST', mcp_scores, lim, str(mcp_scores))
    for r in res[:3] + m: t.check('no vault in answers', r['status'], 200, r['body'], forbidden=[VAULT_MARK, 'vault7', 'Quetzalvault'])
    t.done()

# 4 ----------------------------------------------------------------------------------------------------------------------
def test_tools_list_shows_only_callable_tools(world):
    "Finding 4: tools/list names the tools a token may call, per scope and collection limit; a hidden tool called anyway is still 403."
    w, t = world, Tally("4. tools/list")
    want = {('vectordb', 'read'): {'search', 'list_documents', 'list_libraries', 'get_document'},
            ('vectordb', 'write'): {'search', 'list_documents', 'list_libraries', 'get_document', 'ingest_url', 'delete_document'},
            ('vectordb', 'admin'): {'search', 'list_documents', 'list_libraries', 'get_document', 'ingest_url', 'delete_document', 'ingest_file'},
            ('vectordb', 'admin-pub'): {'search', 'list_documents', 'list_libraries', 'get_document', 'ingest_url', 'delete_document', 'ingest_file'},
            ('qmd', 'read'): {'search', 'vsearch', 'query', 'get', 'multi_get', 'status', 'query_experiences', 'searchDocuments'},
            ('qmd', 'write'): {'search', 'vsearch', 'query', 'get', 'multi_get', 'status', 'query_experiences', 'submit_experience', 'searchDocuments'},
            ('qmd', 'read-pub'): {'search', 'vsearch', 'query', 'get', 'multi_get', 'status', 'searchDocuments'}, # experiences belong to no collection
            ('qmd', 'admin-pub'): {'search', 'vsearch', 'query', 'get', 'multi_get', 'status', 'searchDocuments'}}
    hidden_call = {'vectordb': ('ingest_file', {'path': '/etc/passwd', 'library': 'publib'}), 'qmd': ('submit_experience', {'title': 'x', 'problem_description': 'p', 'solution': 's'})}
    plan = [dict(kind='mcp', port=w['ports'][srv], token=w['tok'][k], messages=[('tools/list', {}), ('tools/call', {'name': hidden_call[srv][0], 'arguments': hidden_call[srv][1]})])
            for srv, k in want]
    for (srv, k), r in zip(want, attack(w, plan)):
        names = {x['name'] for x in json.loads(r[0]['body'])['result']['tools']}
        t.check(f'{srv}:{k}:tools/list', names, want[srv, k], str(sorted(names)))
        if hidden_call[srv][0] not in want[srv, k]: t.check(f'{srv}:{k}:hidden call', r[1]['status'], 403, r[1]['body'])
    t.done()

# 5 ----------------------------------------------------------------------------------------------------------------------
def test_token_folder_another_user_controls_is_refused(world, tmp_path):
    "Finding 5: a QMD_NB_HOME inside a folder nobody owns (where nobody planted tokens.json with a token of its own) is refused."
    t = Tally("5. token folder")
    shared = Path(tempfile.mkdtemp(prefix='qmd-nb-shared-')); os.chmod(shared, 0o755)
    try:
        os.chown(shared, 65534, 65534)
        planted = 'qmdnb_0badc0de_' + 'A' * 43 # nobody's own admin token, written where the owner's server will look
        rec = {'tokens': [{'id': '0badc0de', 'name': 'mine', 'kind': 'token', 'hash': hashlib.sha256(planted.encode()).hexdigest(), 'scope': 'admin', 'collections': None, 'created': 0, 'expires': None}]}
        subprocess.run(['su', 'nobody', '-s', '/bin/sh', '-c', f"mkdir -p {shared}/home/config && echo '{json.dumps(rec)}' > {shared}/home/config/tokens.json"], check=True)
        q = Qmd(shared/'home')
        for args in (('token', 'create', '--scope', 'read'), ('serve', '--transport', 'http', '--port', '1'), ('mcp-config',)):
            r = q(*args, ok=False)
            t.check(' '.join(args[:2]), (r.returncode, 'belongs to another user' in r.stderr), (1, True), r.stderr[-300:])
        loose = tmp_path/'loose'; loose.mkdir(); os.chmod(loose, 0o777) # anyone may write, no sticky bit
        r = Qmd(loose/'home')('token', 'create', '--scope', 'read', ok=False)
        t.check('world-writable parent', (r.returncode, 'writable by other users' in r.stderr), (1, True), r.stderr[-300:])
        os.chmod(loose, 0o1777) # sticky, as /tmp: fine
        t.check('sticky parent', Qmd(loose/'home')('token', 'create', '--scope', 'read', ok=False).returncode, 0)
    finally: shutil.rmtree(shared, ignore_errors=True)
    t.done()

# 6, 7 -------------------------------------------------------------------------------------------------------------------
def test_registration_is_bounded(world):
    "Finding 6: registrations with megabytes of metadata are refused, and tokens.json stays small."
    w, t = world, Tally("6. registration")
    plan = [dict(kind='http', port=w['ports']['vectordb'], method='POST', path='/register', src=f'127.3.0.{i + 2}',
                 body={'client_name': 'x' * 2_000_000, 'redirect_uris': ['http://127.0.0.1:9/cb'], 'token_endpoint_auth_method': 'none'}) for i in range(4)]
    for r in attack(w, plan): t.check('2 MB name', (r['status'], json.loads(r['body']).get('error')), (400, 'invalid_client_metadata'), r['body'][:200])
    size = (w['home']/'config'/'tokens.json').stat().st_size
    t.check('tokens.json small', size < 100_000, True, str(size))
    t.done()

def _flow(port:int, admin:str):
    "Register, authorize, approve with the admin token, exchange the code: (client id, code, tokens)."
    url, cb = f'http://127.0.0.1:{port}', 'http://127.0.0.1:9/cb'
    with httpx.Client(base_url=url) as c:
        cid = c.post('/register', json={'client_name': 'flow', 'redirect_uris': [cb], 'token_endpoint_auth_method': 'none'}).json()['client_id']
        verifier = secrets.token_urlsafe(48)
        ch = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip('=')
        r = c.get('/authorize', params=dict(response_type='code', client_id=cid, redirect_uri=cb, state='s', code_challenge=ch, code_challenge_method='S256', scope='read'))
        rid = r.headers['location'].split('request=')[1]
        r = c.post('/oauth/consent', data={'request': rid, 'secret': admin, 'scope': 'read', 'action': 'approve'})
        code = httpx.URL(r.headers['location']).params['code']
        form = dict(grant_type='authorization_code', code=code, redirect_uri=cb, client_id=cid, code_verifier=verifier)
        return cid, form, c.post('/token', data=form).json()

def test_replayed_oauth_secrets_end_the_grant(world):
    "Finding 7: a used code or a replaced refresh token coming back ends the grant; its live tokens stop at once."
    w, t = world, Tally("7. OAuth replay")
    port, url = w['ports']['qmd'], f"http://127.0.0.1:{w['ports']['qmd']}"
    search = lambda tok: httpx.post(url + '/search', json={'query': 'rsync'}, headers={'Authorization': f'Bearer {tok}'}).status_code
    cid, form, tok = _flow(port, w['tok']['admin'])
    t.check('fresh access token', search(tok['access_token']), 200)
    replay = httpx.post(url + '/token', data=form)
    t.check('code again', (replay.status_code, replay.json().get('error')), (400, 'invalid_grant'), replay.text)
    t.check('its access token after the replay', search(tok['access_token']), 401)
    cid, form, tok = _flow(port, w['tok']['admin'])
    new = httpx.post(url + '/token', data=dict(grant_type='refresh_token', refresh_token=tok['refresh_token'], client_id=cid)).json()
    t.check('refreshed', search(new['access_token']), 200)
    old = httpx.post(url + '/token', data=dict(grant_type='refresh_token', refresh_token=tok['refresh_token'], client_id=cid))
    t.check('old refresh token again', (old.status_code, old.json().get('error')), (400, 'invalid_grant'), old.text)
    t.check('the new access token after the replay', search(new['access_token']), 401)
    again = httpx.post(url + '/token', data=dict(grant_type='refresh_token', refresh_token=new['refresh_token'], client_id=cid))
    t.check('the new refresh token after the replay', again.status_code, 400, again.text)
    t.check('grants gone from token list', 'oauth-flow' in w['qmd']('token', 'list').stdout, False)
    t.done()

# 8, 9 -------------------------------------------------------------------------------------------------------------------
def test_unreadable_bodies_and_repeated_headers(world):
    "Findings 8 and 9: a body too deep to parse is -32700 from the gate (not 500); repeated security headers are refused and WebSocket upgrades are not made."
    w, t = world, Tally("8-9. parsing and headers")
    port, tok = w['ports']['qmd'], w['tok']['read-pub']
    deep = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":' + '[' * 3000 + ']' * 3000 + '}}}'
    body = '{"query":"rsync"}'
    def raw(*hdrs): return '\r\n'.join(['POST /search HTTP/1.1', *hdrs, 'Content-Type: application/json', f'Content-Length: {len(body)}', 'Connection: close', '', body])
    plan = [dict(kind='http', port=port, method='POST', path='/mcp', body=deep, headers={'Authorization': f'Bearer {tok}', 'Accept': 'application/json, text/event-stream'}),
            dict(kind='raw', port=port, data=raw('Host: evil.example', 'Host: 127.0.0.1', f'Authorization: Bearer {tok}')),
            dict(kind='raw', port=port, data=raw('Host: 127.0.0.1', 'Origin: https://evil.example', 'Origin: http://127.0.0.1', f'Authorization: Bearer {tok}')),
            dict(kind='raw', port=port, data=raw('Host: 127.0.0.1', 'Authorization: Bearer nope', f'Authorization: Bearer {tok}')),
            dict(kind='raw', port=port, data=raw('Host: 127.0.0.1', f'Authorization: Bearer {tok}')), # control
            dict(kind='raw', port=port, data='GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'
                                              'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n')]
    res = attack(w, plan)
    t.check('deep JSON', (res[0]['status'], json.loads(res[0]['body'])['error']['code']), (400, -32700), res[0]['body'])
    for name, r in zip(('two Hosts', 'two Origins', 'two Authorizations'), res[1:4]): t.check(name, r['status'], 400, r['body'])
    t.check('one of each', res[4]['status'], 200, res[4]['body'])
    t.check('websocket upgrade', res[5]['status'], 401, res[5]['body']) # not upgraded (the server has no WebSocket): an ordinary request, without a token
    t.done()

# 10 ---------------------------------------------------------------------------------------------------------------------
def test_default_token_made_once_by_racing_processes(tmp_path):
    "Finding 10: six `mcp-config` started at once on a fresh home agree on one default token, the one in the file, and it is valid."
    t = Tally("10. default token race")
    q = Qmd(tmp_path/'home')
    with cf.ThreadPoolExecutor(6) as ex: outs = list(ex.map(lambda _: q('mcp-config').stdout, range(6)))
    toks = {m for o in outs for m in re.findall(r'Bearer (qmdnb_\w+_[\w-]{43})', o)}
    t.check('one token', len(toks), 1, str(toks))
    t.check('the file holds it', (q.home/'config'/'token').read_text(encoding='utf-8').strip() in toks, True)
    from qmd_nb.engine.auth import TokenStore
    t.check('valid', TokenStore(q.home/'config').verify(next(iter(toks))) is not None, True)
    t.done()

# 11 ---------------------------------------------------------------------------------------------------------------------
def test_swapped_folders_lead_nowhere(world):
    "Finding 11: nobody adds its own folder as a collection, then swaps it for a link to a root-only folder: nothing there can be read through it."
    w, t = world, Tally("11. swapped folders", forbidden=['ROOTONLY-8812'])
    area = w['area']
    secret = Path(tempfile.mkdtemp(prefix='qmd-nb-rootonly-')); (secret/'secret.md').write_text('# Root only\n\nROOTONLY-8812 rsync\n', encoding='utf-8'); (secret/'secret.md').chmod(0o600)
    subprocess.run(['su', 'nobody', '-s', '/bin/sh', '-c', f"mkdir {area}/x && printf '# X\\n\\nrsync\\n' > {area}/x/a.md"], check=True)
    add = attack(w, [dict(kind='http', port=w['ports']['qmd'], method='POST', path='/collections/add', headers=bearer(w, 'admin-pub'), body={'name': 'pubx', 'path': str(area/'x')})])[0]
    t.check('add its own folder', add['status'], 200, add['body'])
    subprocess.run(['su', 'nobody', '-s', '/bin/sh', '-c', f"mv {area}/x {area}/x-old && ln -s {secret} {area}/x"], check=True)
    res = attack(w, [dict(kind='http', port=w['ports']['qmd'], method='POST', path='/ingest', headers=bearer(w, k), body={'source': str(area/'x'/'secret.md'), 'library': 'publib'})
                     for k in ('admin-pub', 'admin')])
    for k, r in zip(('admin-pub', 'admin'), res): t.check(f'{k}: ingest through the swapped folder', r['status'], 403, r['body'])
    r = w['qmd']('update', ok=False) # the owner's own update, from the command line: the swapped folder is not followed
    t.check('owner update says so', 'became a link' in r.stdout + r.stderr, True, (r.stdout + r.stderr)[-400:])
    upd = attack(w, [dict(kind='http', port=w['ports']['qmd'], method='POST', path='/update', headers=bearer(w, 'write'), body={})])[0]
    t.check('write token update says so', (upd['status'], 'became a link' in upd['body']), (200, True), upd['body'])
    look = attack(w, [dict(kind='http', port=w['ports']['qmd'], method='POST', path='/search', headers=bearer(w, 'admin-pub'), body={'query': 'rsync', 'limit': 50})])[0]
    t.check('nothing of it to find', look['status'], 200, look['body'])
    w['qmd']('collection', 'remove', 'pubx'); shutil.rmtree(secret, ignore_errors=True)
    t.done()

def test_zz_review_totals():
    print(f"\nsecurity review probes: {TOTALS['probes']} probes, {TOTALS['leaks']} leaks")
    assert TOTALS['probes'] > 40 and TOTALS['leaks'] == 0

# 12 ---------------------------------------------------------------------------------------------------------------------
SWAPPER = r'''
import os, sys, time
doc, secret, stop = sys.argv[1:4]
tmp, end = doc + '.swap', time.time() + 120
while not os.path.exists(stop) and time.time() < end:
    os.symlink(secret, tmp); os.replace(tmp, doc) # the file is now a link to the root-only one...
    time.sleep(0.002)
    with open(tmp, 'w') as f: f.write('# R\n\nordinary words\n')
    os.replace(tmp, doc) # ...and a file again
    time.sleep(0.002)
'''

def test_file_swapped_for_a_link_while_queued_is_not_read(world):
    "Finding 12: a file nobody owns, confined when the request came, swapped for a link to a root-only file before the write queue reads it: never read."
    w, t = world, Tally("12. file swapped while queued", forbidden=['ROOTONLY-5521'])
    area, home = w['area'], w['home']
    secret = Path(tempfile.mkdtemp(prefix='qmd-nb-rootonly-')); (secret/'s.md').write_text('# Root only\n\nROOTONLY-5521\n', encoding='utf-8'); (secret/'s.md').chmod(0o600)
    subprocess.run(['su', 'nobody', '-s', '/bin/sh', '-c', f"mkdir {area}/r && printf '# R\\n\\nordinary words\\n' > {area}/r/doc.md"], check=True)
    (w['box']/'swapper.py').write_text(SWAPPER, encoding='utf-8'); (w['box']/'swapper.py').chmod(0o644)
    stop = w['box']/'stop'
    sw = subprocess.Popen(['su', 'nobody', '-s', '/bin/sh', '-c', f"/usr/bin/python3 {w['box']/'swapper.py'} {area}/r/doc.md {secret}/s.md {stop}"])
    try:
        time.sleep(0.5)
        ingest = lambda i: dict(kind='http', port=w['ports']['qmd'], method='POST', path='/ingest', headers=bearer(w, 'admin-pub'),
                                body={'source': f'{area}/r/doc.md', 'library': 'publib', 'background': i % 2 == 1})
        plan = [dict(kind='par', steps=[ingest(i) for i in range(30)]) for _ in range(2)] # queued together: read up to seconds after the check
        plan += [dict(kind='mcp', port=w['ports']['vectordb'], token=w['tok']['admin-pub'],
                      messages=[('tools/call', {'name': 'ingest_file', 'arguments': {'path': f'{area}/r/doc.md', 'library': 'publib'}})] * 20)]
        res = attack(w, plan)
    finally:
        stop.touch(); sw.wait(60); stop.unlink()
    time.sleep(2) # background jobs finish
    rest = [r for batch in res[:-1] for r in batch]
    for r in rest: t.check('REST ingest', r['status'] in (200, 202, 403), True, r['body'])
    for r in res[-1]: t.check('MCP ingest_file', r['status'], 200, r['body'])
    subprocess.run(['su', 'nobody', '-s', '/bin/sh', '-c', f"rm -f {area}/r/doc.md && printf '# R\\n\\nordinary words\\n' > {area}/r/doc.md"], check=True)
    ctl = attack(w, [ingest(0)])[0] # control: the same request, nothing swapped
    t.check('the same ingest, nothing swapped', ctl['status'], 200, ctl['body'])
    copies = [p for p in (home/'cache').rglob('*') if p.is_file() and b'ROOTONLY-5521' in p.read_bytes()]
    t.check('no copy of the root-only file', copies, [], str(copies))
    look = attack(w, [dict(kind='http', port=w['ports']['qmd'], method='POST', path='/search', headers=bearer(w, 'admin-pub'), body={'query': 'rootonly 5521', 'limit': 50})])[0]
    t.check('nothing of it to find', look['status'], 200, look['body'])
    w['qmd']('collection', 'remove', 'publib', ok=False); shutil.rmtree(secret, ignore_errors=True)
    t.done()

# 13, 14 ----------------------------------------------------------------------------------------------------------------
def test_default_token_goes_to_loopback_servers_only(tmp_path):
    "Finding 13: `qmd-nb search --server URL` sent the unlimited default token to any server named; now only to loopback addresses."
    t = Tally("13. default token stays on this machine")
    from qmd_nb.engine.auth import TokenStore, default_token, client_token, token_dir
    env = {'QMD_NB_HOME': str(tmp_path/'home')}
    tok = default_token(TokenStore(token_dir(env)))
    for url, want in (('http://127.0.0.1:18765', tok), ('http://127.0.0.2:18765', tok), ('http://localhost:18765', tok), ('http://[::1]:18765', tok),
                      ('http://evil.example:18765', None), ('http://localhost.evil.example', None), ('http://127.0.0.1.evil.example', None), ('https://10.0.0.5', None)):
        t.check(url, client_token(env, url), want)
    t.check('QMD_NB_TOKEN is the user\'s choice', client_token({**env, 'QMD_NB_TOKEN': 'mine'}, 'http://evil.example'), 'mine')
    t.done()

def test_every_served_tool_has_an_operation():
    "Finding 14: a tool missing from the scope table passed as the generic 'mcp' operation, which any token may do; every tool of every profile maps to one, and the door refuses to start otherwise."
    t = Tally("14. tools in the scope table")
    from qmd_nb.engine.auth import OPERATIONS
    from qmd_nb.profiles.registry import PROFILES, profile_tools
    for prof in PROFILES:
        for tool in profile_tools(prof): t.check(f'{prof}.{tool}', f'{prof}.{tool}' in OPERATIONS, True)
    t.done()

# 15 ---------------------------------------------------------------------------------------------------------------------
def test_update_reads_only_what_stays_inside(tmp_path):
    "Finding 15: update lists a collection's files, then reads the changed ones: a file nobody swaps for a link to a root-only file in between is not read (nor a FIFO: the update would hang)."
    t = Tally("15. update's reads", forbidden=['ROOTONLY-7070'])
    from qmd_nb.engine.discover import discover
    from qmd_nb.engine.readpool import read_file, ToRead, Unreadable
    from qmd_nb.engine.config import Collection
    from qmd_nb.engine.text import Analyzer
    secret = Path(tempfile.mkdtemp(prefix='qmd-nb-rootonly-')); (secret/'s.md').write_text('# Root only\n\nROOTONLY-7070\n', encoding='utf-8'); (secret/'s.md').chmod(0o600)
    box = Path(tempfile.mkdtemp(prefix='qmd-nb-coll-')); box.chmod(0o755); os.chown(box, 65534, 65534)
    try:
        subprocess.run(['su', 'nobody', '-s', '/bin/sh', '-c', f"cd {box} && printf '# A\\n\\nordinary\\n' > a.md && printf '# B\\n\\nordinary\\n' > b.md && mkdir sub && printf '# C\\n\\nordinary\\n' > sub/c.md && ln -s sub/c.md in.md"], check=True)
        c = Collection('pubx', str(box), '**/*.md')
        listed = list(discover(c.path, c.masks))
        t.check('listed', sorted(r for r, _, _ in listed), ['a.md', 'b.md', 'in.md', 'sub/c.md'])
        subprocess.run(['su', 'nobody', '-s', '/bin/sh', '-c', f"cd {box} && rm a.md && ln -s {secret}/s.md a.md && rm b.md && mkfifo b.md"], check=True) # after the listing
        out = {rel: read_file(ToRead(rel, full), c.name, os.path.realpath(c.path), Analyzer()) for rel, full, st in listed} # what update's readers (the pool's too) run
        t.check('the swapped file is not read', type(out['a.md']).__name__, 'Unreadable', repr(out['a.md'])[:300])
        t.check('the FIFO is not waited on', type(out['b.md']).__name__, 'Unreadable', repr(out['b.md'])[:300])
        t.check('why', sorted(r for r, v in out.items() if isinstance(v, Unreadable)), ['a.md', 'b.md'], str({r: v for r, v in out.items() if isinstance(v, Unreadable)}))
        t.check('a link inside the folder still read', getattr(out['in.md'], 'body', ''), getattr(out['sub/c.md'], 'body', None))
    finally: shutil.rmtree(box, ignore_errors=True); shutil.rmtree(secret, ignore_errors=True)
    t.done()

# 16 ---------------------------------------------------------------------------------------------------------------------
def test_oauth_grant_ends_with_the_admin_token_that_approved_it(world):
    "Finding 16: a grant lives no longer than its approving admin token: capped at its expiry, ended by its revocation."
    w, t = world, Tally("16. OAuth approver")
    port, url = w['ports']['oauth'], f"http://127.0.0.1:{w['ports']['oauth']}"
    search = lambda tok: httpx.post(url + '/search', json={'query': 'rsync'}, headers={'Authorization': f'Bearer {tok}'}).status_code
    short = w['qmd']('token', 'create', '--scope', 'admin', '--expires', '1h', '--name', 'short-approver').stdout.strip()
    cid, form, tok = _flow(port, short)
    recs = {r['name']: r for r in json.loads((w['home']/'config'/'tokens.json').read_text(encoding='utf-8'))['tokens']}
    grant = next(r for r in recs.values() if r.get('kind') == 'oauth' and r.get('approver') == recs['short-approver']['id'])
    t.check('grant expires with the approver', grant['expires'] <= recs['short-approver']['expires'], True, str(grant))
    t.check('access token works', search(tok['access_token']), 200)
    said = w['qmd']('token', 'revoke', 'short-approver').stdout
    t.check('the grant is revoked with it', ('and the 1 OAuth grant it approved' in said, grant['name'] in w['qmd']('token', 'list').stdout), (True, False), said)
    t.check('access token after the approver is revoked', search(tok['access_token']), 401)
    r = httpx.post(url + '/token', data=dict(grant_type='refresh_token', refresh_token=tok['refresh_token'], client_id=cid))
    t.check('refresh after the approver is revoked', (r.status_code, r.json().get('error')), (400, 'invalid_grant'), r.text)
    t.done()

# 17 ---------------------------------------------------------------------------------------------------------------------
def test_watch_figures_of_other_collections_stay_hidden(world):
    "Finding 17: a collection-limited token's `status` shows the watcher's figures of its collections only."
    w, t = world, Tally("17. watch freshness")
    p, port, log = _serve(w['qmd'], '--tools', 'qmd', '--watch')
    vault = w['base']/'vault7-data'
    try:
        own = lambda: httpx.get(f'http://127.0.0.1:{port}/status', headers={'Authorization': f"Bearer {w['default']}"}).json().get('freshness', {})
        look = lambda: attack(w, [dict(kind='http', port=port, method='GET', path='/status', headers=bearer(w, 'read-pub'))])[0]
        t0 = time.time()
        settled = lambda f: f.get('batches') and f.get('vectors') == 'current' # armed, caught up, and the catch-up embedded (its own figures may change until then)
        while not settled(own()) and time.time() - t0 < 60: time.sleep(0.2)
        before, b0 = json.loads(look()['body'])['freshness'], own()['batches']
        for i in range(5): (vault/f'new{i}.md').write_text(f'# New {i}\n\nvault news {i}\n', encoding='utf-8')
        while own()['batches'] == b0 and time.time() - t0 < 120: time.sleep(0.2)
        t.check('the owner sees the change', own()['changed'] >= 5, True, json.dumps(own()))
        after = look()
        t.check('status of the limited token', after['status'], 200, after['body'])
        t.check('its figures unchanged', json.loads(after['body'])['freshness'], before, after['body'], forbidden=[VAULT_MARK, 'vault7'])
    finally:
        for i in range(5): (vault/f'new{i}.md').unlink(missing_ok=True)
        p.terminate(); p.wait(30)
    w['qmd']('update')
    t.done()

# 18 ---------------------------------------------------------------------------------------------------------------------
def test_experience_count_is_not_told_to_limited_tokens(world):
    "Finding 18: `initialize` tells a collection-limited token nothing of the experience records it may not read."
    w, t = world, Tally("18. recall instructions")
    plan = [dict(kind='init', port=w['ports']['qmd'], token=w['tok'][k]) for k in ('read-pub', 'admin-pub', 'read')]
    lim, lim_admin, whole = [json.loads(r['body'])['result'].get('instructions') or '' for r in attack(w, plan)]
    t.check('limited read token', 'Recall' in lim or 'experience' in lim, False, lim)
    t.check('limited admin token', 'Recall' in lim_admin, False, lim_admin)
    t.check('an unlimited token is told', 'Recall:' in whole, True, whole)
    t.done()

# 19, 20 -----------------------------------------------------------------------------------------------------------------
def test_contexts_and_multi_get_replies_are_bounded(world):
    "Findings 19, 20: a context is at most 2,000 characters; multi_get gives a file once, however often it is named."
    w, t = world, Tally("19-20. bounded replies")
    port = w['ports']['qmd']
    plan = [dict(kind='http', port=port, method='POST', path='/contexts/add', headers=bearer(w, 'write'), body={'path': 'qmd://pub', 'text': 'C' * 100_000}),
            dict(kind='http', port=port, method='POST', path='/multi_get', headers=bearer(w, 'read-pub'), body={'pattern': ','.join(['pub/notes.md'] * 200), 'max_bytes': 10**12})]
    big, many = attack(w, plan)
    t.check('a 100,000-character context', (big['status'], 'too long' in big['body']), (400, True), big['body'][:300])
    t.check('a file named 200 times', (many['status'], len(json.loads(many['body'])['results'])), (200, 1), many['body'][:300])
    t.check('no context was kept', 'CCCC' in w['qmd']('context', 'list').stdout, False)
    t.done()

# 21 ---------------------------------------------------------------------------------------------------------------------
def test_one_token_cannot_use_up_the_mcp_sessions_of_others(world):
    "Finding 21: each principal has its own MCP sessions (200 open at most): one token using them up leaves another alone."
    w, t = world, Tally("21. MCP sessions")
    other = w['qmd']('token', 'create', '--scope', 'read', '--collections', 'pub,pubx,publib', '--name', 'read-pub-2').stdout.strip()
    init = lambda tok: dict(kind='http', port=w['ports']['qmd'], method='POST', path='/mcp', headers={'Authorization': f'Bearer {tok}', 'Accept': 'application/json, text/event-stream'},
                            body={'jsonrpc': '2.0', 'id': 0, 'method': 'initialize', 'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'hog', 'version': '1'}}})
    out = attack(w, [init(w['tok']['read-pub']) for _ in range(205)] + [init(other)])
    t.check('200 sessions open', sum(r['status'] == 200 for r in out[:200]), 200)
    t.check('the 201st to 205th of the same token', {r['status'] for r in out[200:205]}, {503}, out[200]['body'][:200])
    t.check('another token of the same scope and collections', out[205]['status'], 200, out[205]['body'][:200])
    t.check('one line in the log, not one per refusal', w['logs']['qmd'].read_text(encoding='utf-8').count('Refusing to open a new session'), 1)
    t.done()

# 22 ---------------------------------------------------------------------------------------------------------------------
def test_a_reply_nobody_reads_is_dropped(world):
    "Finding 22: a client that stops reading a reply has as long as --client-timeout to go on; then its connection is dropped."
    import socket
    w, t = world, Tally("22. unread replies")
    page = w['base']/'pub'/'huge.md'; page.write_text('# Huge\n\n' + ('rsync ' * 20 + '\n') * 80_000, encoding='utf-8') # 9.6 MB
    w['qmd']('update')
    p, port, log = _serve(w['qmd'], '--tools', 'qmd', '--client-timeout', '2')
    try:
        body = json.dumps({'file': 'pub/huge.md'}).encode()
        msg = (f"POST /get HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {w['tok']['read-pub']}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        socks = []
        for _ in range(3):
            k = socket.socket(); k.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); k.connect(('127.0.0.1', port)); k.sendall(msg); socks.append(k)
        time.sleep(8) # the reply stalls at once; the server gives up after 2 s
        for k in socks:
            got, k_ = 0, k.settimeout(10)
            try:
                while (b := k.recv(1 << 20)): got += len(b)
            except (ConnectionResetError, socket.timeout): pass
            t.check('the unread reply was dropped', got < page.stat().st_size, True, str(got))
            k.close()
        t.check('others are served', httpx.post(f'http://127.0.0.1:{port}/search', json={'query': 'rsync'}, headers=bearer(w, 'read-pub')).status_code, 200)
    finally:
        p.terminate(); p.wait(30); page.unlink(); w['qmd']('update')
    t.done()

# 23 ---------------------------------------------------------------------------------------------------------------------
def test_client_words_reach_the_log_without_control_characters(world):
    "Finding 23: C1 control characters (CSI, OSC, ST) of a client's query are escaped in the server's log."
    w, t = world, Tally("23. log escapes")
    q = 'rsync \u009d0;PWNED\u009c \u009b2J \x1b[31m'
    attack(w, [dict(kind='mcp', port=w['ports']['qmd'], token=w['tok']['read'], messages=[('tools/call', {'name': 'searchDocuments', 'arguments': {'query': q}})])])
    time.sleep(0.5)
    raw_log = w['logs']['qmd'].read_bytes()
    t.check('the call was logged', b'PWNED' in raw_log, True)
    t.check('no raw C1 or ESC', [c for c in (b'\xc2\x9b', b'\xc2\x9c', b'\xc2\x9d', b'\x1b') if c in raw_log], [])
    t.done()

# 24 ---------------------------------------------------------------------------------------------------------------------
def test_a_flood_of_consent_requests_keeps_the_owners(world):
    "Finding 24: another user's client floods /authorize (25 calls, under the rate limit); the owner's waiting request still takes its code."
    w, t = world, Tally("24. consent requests")
    p, port, log = _serve(w['qmd'], '--tools', 'qmd') # a server of its own: the flood spends this one's rate limit only
    cb, verifier = 'http://127.0.0.1:9/cb', secrets.token_urlsafe(48)
    ch = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip('=')
    try:
        with httpx.Client(base_url=f'http://127.0.0.1:{port}') as c:
            cid = c.post('/register', json={'client_name': 'owner', 'redirect_uris': [cb], 'token_endpoint_auth_method': 'none'}).json()['client_id']
            r = c.get('/authorize', params=dict(response_type='code', client_id=cid, redirect_uri=cb, state='s', code_challenge=ch, code_challenge_method='S256', scope='read'))
            rid, code = r.headers['location'].split('request=')[1], re.findall(r'enter (\S+) on the page', log.read_text(encoding='utf-8'))[-1]
            reg = attack(w, [dict(kind='http', port=port, method='POST', path='/register', body={'client_name': 'evil', 'redirect_uris': [cb], 'token_endpoint_auth_method': 'none'})])[0]
            q = (f"/authorize?response_type=code&client_id={json.loads(reg['body'])['client_id']}&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&state=s"
                 f"&code_challenge={'A' * 43}&code_challenge_method=S256&scope=read")
            flood = attack(w, [dict(kind='http', port=port, method='GET', path=q) for _ in range(25)])
            t.check('the flood is served', sum('request=' in r['headers'].get('location', '') for r in flood), 25, str(flood[-1])[:300])
            r = c.post('/oauth/consent', data={'request': rid, 'secret': code, 'scope': 'read', 'action': 'approve'})
            t.check('the owner approves after it', r.status_code, 303, r.text)
            if r.status_code == 303:
                tok = c.post('/token', data=dict(grant_type='authorization_code', code=httpx.URL(r.headers['location']).params['code'], redirect_uri=cb,
                                                 client_id=cid, code_verifier=verifier)).json()
                t.check('and gets a token', 'access_token' in tok, True, str(tok))
    finally: p.terminate(); p.wait(30)
    t.done()

# 25 ---------------------------------------------------------------------------------------------------------------------
def _slow_query(words='parameter object cmdlet value', size=2000) -> str:
    "Common words, then excluded two-word phrases that no page holds, up to the query's length limit."
    import itertools
    q = words
    for a, b in itertools.product('qxzjkvwyfhg', repeat=2):
        if len(q) + 8 > size: break
        q += f' -"{a} {b}"'
    return q

def test_a_flood_of_slow_searches_ends_with_its_answers(tmp_path):
    "Finding 25: 16 at once of the slowest search for 8 s; 3 s (a time limit and a second) after the flood, another token's /status answers at once."
    import random, threading
    rnd, vocab = random.Random(7), "parameter object cmdlet value the of a to and in is for".split() + [f'w{i}' for i in range(400)]
    pages = {f'p{i:04d}.md': f'# Page {i}\n\n' + '\n'.join(' '.join(rnd.choice(vocab) for _ in range(15)) for _ in range(60)) for i in range(2000)}
    qmd = Qmd(tmp_path/'home'); qmd('collection', 'add', write_tree(tmp_path/'pages', pages), '--name', 'pages')
    attacker, victim = (qmd('token', 'create', '--scope', 'read', '--name', n).stdout.strip() for n in ('attacker', 'victim'))
    p, port, log = _serve(qmd, '--tools', 'qmd', '--request-timeout', '2')
    url, stop, sent = f'http://127.0.0.1:{port}', threading.Event(), []
    def flood():
        with httpx.Client(base_url=url, headers={'Authorization': f'Bearer {attacker}'}, timeout=60) as c:
            while not stop.is_set(): sent.append(c.post('/search', json={'query': _slow_query(), 'limit': 1000}).status_code)
    try:
        ts = [threading.Thread(target=flood) for _ in range(16)]
        for t_ in ts: t_.start()
        time.sleep(8); stop.set()
        for t_ in ts: t_.join(120)
        time.sleep(3) # what the flood started has met its time limit by now
        took = []
        for _ in range(5):
            t0 = time.monotonic(); r = httpx.get(f'{url}/status', headers={'Authorization': f'Bearer {victim}'}, timeout=60)
            took.append((r.status_code, round(time.monotonic() - t0, 2))); time.sleep(0.2)
        print('\nflood answers', sorted(set(sent)), len(sent), 'then /status', took)
        assert sent and all(code == 200 for code, _ in took) and sorted(s for _, s in took)[2] < 1.0, took
    finally: p.terminate(); p.wait(30)
