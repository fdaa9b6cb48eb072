"""MCP protocol conformance: revision negotiation and unknown methods over stdio (raw JSON-RPC and the SDK client), and
the official conformance suite (npm @modelcontextprotocol/conformance, on Node 22 via tools/node.sh) against
`qmd-nb serve --transport http`, with the expected failures of tests/conformance/ (each with its reason): the server
scenarios (the suite sends no token: `--no-auth`) and the authorization-server scenarios against qmd-nb's OAuth."""
import asyncio, json, re, socket, subprocess, threading, time, urllib.request
import httpx, yaml
from pathlib import Path
import pytest
from conftest import QMD_BIN, ROOT

CONFORMANCE = '@modelcontextprotocol/conformance@0.2.0-alpha.12' # the release with the 2026-07-28 scenarios
NODE_SH = str(ROOT/'tools'/'node.sh')
BASELINES = ROOT/'tests'/'conformance'

# -- stdio: every revision the SDK speaks, and -32601 for unknown methods --------------------------------------------

class Stdio:
    "`qmd-nb mcp` as a subprocess spoken to in raw JSON-RPC lines."
    def __init__(self, env):
        self.p = subprocess.Popen([QMD_BIN, 'mcp'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        self.n = 0
    def notify(self, method, params=None):
        self.p.stdin.write(json.dumps({'jsonrpc': '2.0', 'method': method, **({'params': params} if params is not None else {})}) + '\n'); self.p.stdin.flush()
    def ask(self, method, params=None):
        self.n += 1
        self.p.stdin.write(json.dumps({'jsonrpc': '2.0', 'id': self.n, 'method': method, **({'params': params} if params is not None else {})}) + '\n')
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            assert line, f"server closed stdout; stderr: {self.p.stderr.read()}"
            m = json.loads(line)
            if m.get('id') == self.n: return m
    def close(self):
        self.p.stdin.close()
        assert self.p.wait(timeout=10) == 0

def _init(s, version):
    return s.ask('initialize', {'protocolVersion': version, 'capabilities': {}, 'clientInfo': {'name': 'pytest', 'version': '0'}})

def test_handshake_revisions(qmd, notes):
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
    qmd('collection', 'add', notes, '--name', 'notes')
    assert HANDSHAKE_PROTOCOL_VERSIONS == ('2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25')
    for v in (*HANDSHAKE_PROTOCOL_VERSIONS, '1999-01-01'):
        s = Stdio(qmd.env)
        r = _init(s, v)['result']
        assert r['protocolVersion'] == (v if v in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION), (v, r)
        assert r['serverInfo']['name'] == 'qmd' and 'collections: notes' in r['instructions']
        assert {'tools', 'resources', 'prompts', 'completions', 'logging'} <= set(r['capabilities']), r['capabilities']
        assert r['capabilities']['resources']['subscribe'] is False
        s.notify('notifications/initialized')
        assert s.ask('ping')['result'] == {}
        assert s.ask('foo/bar')['error']['code'] == -32601
        assert s.ask('tools/call', {'name': 'search', 'arguments': {'query': 'rsync'}})['result']['structuredContent']['results'][0]['file'] == 'notes/backup.md'
        assert s.ask('resources/list')['result']['resources'] == [] # documents are found with the tools, not listed
        assert [t['uriTemplate'] for t in s.ask('resources/templates/list')['result']['resourceTemplates']] == ['qmd://{+path}']
        done = s.ask('completion/complete', {'ref': {'type': 'ref/resource', 'uri': 'qmd://{+path}'}, 'argument': {'name': 'path', 'value': 'notes/coo'}})
        assert done['result']['completion'] == {'values': ['notes/cooking/café.md', 'notes/cooking/pasta.md'], 'total': 2, 'hasMore': False}
        assert s.ask('logging/setLevel', {'level': 'debug'})['result'] == {}
        s.close()

def test_stateless_revision_over_stdio(qmd, notes):
    "2026-07-28 needs no handshake: every request carries the revision and the client's capabilities in `_meta`."
    qmd('collection', 'add', notes, '--name', 'notes')
    s = Stdio(qmd.env)
    meta = {'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}}
    d = s.ask('server/discover', {'_meta': meta})['result']
    assert '2026-07-28' in d['supportedVersions'] and {'tools', 'resources', 'prompts', 'completions'} <= set(d['capabilities'])
    assert s.ask('foo/bar', {'_meta': meta})['error']['code'] == -32601
    assert s.ask('logging/setLevel', {'level': 'debug', '_meta': meta})['error']['code'] == -32601 # gone in 2026-07-28
    r = s.ask('tools/call', {'name': 'search', 'arguments': {'query': 'rsync'}, '_meta': meta})['result']
    assert r['structuredContent']['results'][0]['file'] == 'notes/backup.md'
    bad = s.ask('tools/call', {'name': 'search', 'arguments': {'query': 'x'}, '_meta': {**meta, 'io.modelcontextprotocol/protocolVersion': '1999-01-01'}})
    assert 'error' in bad and '2026-07-28' in json.dumps(bad['error']), bad
    s.close()

def test_sdk_client_negotiates_both_eras(qmd, notes):
    "The SDK's client picks 2026-07-28 by itself and the handshake (2025-11-25) when asked; both get the same answers."
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    qmd('collection', 'add', notes, '--name', 'notes')
    async def run(mode):
        async with Client(StdioServerParameters(command=QMD_BIN, args=['mcp'], env=qmd.env), mode=mode) as c:
            r = await c.call_tool('search', {'query': 'rsync', 'limit': 1})
            return c.protocol_version, r.structured_content['results'][0]['file']
    assert asyncio.run(run('auto')) == ('2026-07-28', 'notes/backup.md')
    assert asyncio.run(run('legacy')) == ('2025-11-25', 'notes/backup.md')

# -- the official conformance suite over Streamable HTTP ---------------------------------------------------------------

def _npm_unreachable() -> str|None:
    "Why the npm registry cannot be reached, or None when it answers."
    r = subprocess.run(['npm', 'ping'], capture_output=True, text=True, timeout=60)
    return None if r.returncode == 0 else (r.stderr or r.stdout).strip()[-500:]

@pytest.fixture(scope='session')
def conformance_cli():
    "Node 22 and the suite, installed once (cached outside the repository); skipped only when npm's registry is unreachable."
    r = subprocess.run([NODE_SH, '-y', CONFORMANCE, '--version'], capture_output=True, text=True, timeout=600, cwd=ROOT)
    if r.returncode != 0:
        why = _npm_unreachable()
        if why is not None: pytest.skip(f"npm registry unreachable, cannot install Node 22 / {CONFORMANCE}: {why}")
        raise AssertionError(f"tools/node.sh -y {CONFORMANCE} failed ({r.returncode}): {r.stderr[-2000:]}")
    return [NODE_SH, '-y', CONFORMANCE]

def _free_port() -> int:
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def _serve(qmd, *args):
    "`qmd-nb serve --transport http` on a free loopback port; (process, base URL) once /health answers."
    port = _free_port()
    p = subprocess.Popen([QMD_BIN, 'serve', '--transport', 'http', '--host', '127.0.0.1', '--port', str(port), *args], env=qmd.env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f'http://127.0.0.1:{port}/health', timeout=2): break
        except OSError:
            assert p.poll() is None, f"qmd-nb serve exited {p.returncode}: {p.stderr.read()}"
            assert time.monotonic() < deadline, "qmd-nb serve did not answer /health within 60 s"
            time.sleep(0.2)
    return p, f'http://127.0.0.1:{port}'

def _stop(p):
    p.terminate()
    try: p.wait(timeout=20)
    except subprocess.TimeoutExpired: p.kill(); p.wait()

@pytest.fixture
def served(qmd, notes):
    "A server over the notes fixture, without tokens (the suite's server scenarios cannot send one); yields the MCP URL."
    qmd('collection', 'add', notes, '--name', 'notes')
    p, url = _serve(qmd, '--no-auth')
    yield url + '/mcp'
    _stop(p)

def _run_suite(cli, url, out:Path, baseline:Path, *args) -> dict:
    "Run the suite (its exit code is 0 only if every failure is in `baseline` and no baseline entry passes); returns {scenario: checks}."
    r = subprocess.run([*cli, 'server', '--url', url, '-o', str(out), '--expected-failures', str(baseline), *args],
                       capture_output=True, text=True, timeout=600, cwd=out)
    assert r.returncode == 0, f"conformance suite failed ({r.returncode}):\n{r.stdout[-6000:]}\n{r.stderr[-2000:]}"
    assert 'Baseline check passed: all failures are expected.' in r.stdout, r.stdout[-3000:]
    res = {}
    for d in out.glob('server-*'):
        name = re.sub(r'-\d{4}-\d\d-\d\dT[\d-]+Z$', '', d.name[len('server-'):]) # server-<scenario>-<timestamp>
        res[name] = json.loads((d/'checks.json').read_text())
    return res

def _all_pass(res:dict, scenarios) -> None:
    for s in scenarios:
        assert s in res, f"scenario {s} did not run (ran: {sorted(res)})"
        bad = [(c['id'], c['status'], c.get('errorMessage')) for c in res[s] if c['status'] in ('FAILURE', 'WARNING')]
        assert not bad, (s, bad)
        assert any(c['status'] == 'SUCCESS' for c in res[s]), (s, res[s])

def test_conformance_handshake_revisions(conformance_cli, served, tmp_path):
    "The suite's default run (2025-06-18 / 2025-11-25 scenarios)."
    res = _run_suite(conformance_cli, served, tmp_path, BASELINES/'expected-failures.yml')
    _all_pass(res, ['server-initialize', 'server-session-lifecycle', 'ping', 'logging-set-level', 'completion-complete',
                    'tools-list', 'tools-call-simple-text', 'tools-call-error', 'resources-list', 'prompts-list',
                    'server-sse-multiple-streams', 'dns-rebinding-protection'])

def test_conformance_2026_07_28(conformance_cli, served, tmp_path):
    "The scenarios the 2026-07-28 revision requires (stateless requests, discover, caching, header checks, ...)."
    res = _run_suite(conformance_cli, served, tmp_path, BASELINES/'expected-failures-2026-07-28.yml', '--requirements', '2026-07-28')
    _all_pass(res, ['completion-complete', 'tools-list', 'tools-call-simple-text', 'tools-call-error', 'resources-list',
                    'prompts-list', 'server-sse-multiple-streams', 'sep-2164-resource-not-found', 'dns-rebinding-protection',
                    'caching', 'http-header-validation', 'input-required-result-unsupported-methods'])
    passed = {c['id'] for c in res['server-stateless'] if c['status'] == 'SUCCESS'}
    assert len(passed) >= 20 and {'sep-2575-server-implements-discover', 'sep-2575-http-server-method-not-found-404'} <= passed, passed

# -- the suite's authorization-server scenarios against qmd-nb's OAuth -------------------------------------------------

def _approve(url:str, token:str, port:int):
    "Play the user: open the authorization URL, approve on the consent page with the admin token, land on the suite's callback."
    with httpx.Client(timeout=30) as h:
        r = h.get(url, follow_redirects=False)
        assert r.status_code == 302 and '/oauth/consent?request=' in r.headers['location'], (r.status_code, r.text)
        rid = r.headers['location'].split('request=')[1]
        assert h.get(r.headers['location']).status_code == 200
        r = h.post(url.split('/authorize')[0] + '/oauth/consent', data={'request': rid, 'secret': token, 'scope': 'read', 'action': 'approve'}, follow_redirects=False)
        assert r.status_code == 303 and r.headers['location'].startswith(f'http://127.0.0.1:{port}/callback?'), (r.status_code, r.text)
        h.get(r.headers['location']) # the suite's callback server takes the code from there

def test_conformance_authorization_server(conformance_cli, qmd, notes, tmp_path):
    "The suite's authorization-server scenarios: RFC 8414 metadata, then the authorization code grant with PKCE, a client registered by RFC 7591."
    qmd('collection', 'add', notes, '--name', 'notes')
    p, base = _serve(qmd)
    try:
        token, cb = (qmd.home/'config'/'token').read_text().strip(), _free_port()
        reg = httpx.post(base + '/register', json={'client_name': 'conformance', 'redirect_uris': [f'http://127.0.0.1:{cb}/callback'], 'token_endpoint_auth_method': 'none'})
        assert reg.status_code == 201, reg.text
        out = tmp_path/'auth-results'
        suite = subprocess.Popen([*conformance_cli, 'authorization', '--url', base, '--client-id', reg.json()['client_id'], '--resource', base + '/mcp',
                                  '-p', str(cb), '-o', str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
        lines, approving = [], None
        for line in suite.stdout:
            lines.append(line)
            if line.startswith(base + '/authorize?') and approving is None:
                approving = threading.Thread(target=_approve, args=(line.strip(), token, cb)); approving.start()
        suite.wait(timeout=600)
        if approving is not None: approving.join(60)
        log = ''.join(lines)
    finally: _stop(p)
    scenario = lambda d: re.sub(r'-\d{4}-\d\d-\d\dT[\d-]+Z$', '', d.name.removeprefix('authorization-server-')) # authorization-server-<scenario>-<timestamp>
    checks = {f"{scenario(d)}:{c['id']}": c for d in out.glob('*') for c in json.loads((d/'checks.json').read_text())} if out.exists() else {}
    expected = yaml.safe_load((BASELINES/'expected-failures-auth.yml').read_text())['authorization']
    assert {'authorization-server-metadata-endpoint:authorization-server-metadata', 'authorization-code-grant:authorization-code-grant'} <= set(checks), (sorted(checks), log[-3000:])
    for k, c in checks.items():
        assert c['status'] == expected.get(k, 'SUCCESS'), (k, c, log[-3000:])
    assert set(expected) <= set(checks), "a stale entry in expected-failures-auth.yml"
    print(f"conformance authorization scenarios: {sum(c['status'] == 'SUCCESS' for c in checks.values())} checks passed, "
          f"{len(expected)} expected failures ({', '.join(expected)})")
