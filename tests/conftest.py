"Shared fixtures: a real qmd-nb process per call, on a private QMD_NB_HOME, over corpora made in temp folders."
import json, os, subprocess, sys, tempfile
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent/'shared'/'data'
# every test gets its own index, but the model converted for OpenVINO (~10 s) is made once and shared
os.environ.setdefault('QMD_NB_MODEL_CACHE', str(Path(tempfile.gettempdir())/'qmd-nb-test-models')) # as the notebooks do
os.environ.setdefault('HF_HUB_OFFLINE', '1')
QMD_BIN = str(Path(sys.executable).parent/'qmd-nb')

class Qmd:
    "Runs `qmd-nb` as a subprocess with its own home."
    def __init__(self, home:Path): self.home = home; self.env = {**os.environ, 'QMD_NB_HOME': str(home), 'HF_HUB_OFFLINE': '1'}
    def __call__(self, *args, ok=True, input=None):
        r = subprocess.run([QMD_BIN, *map(str, args)], env=self.env, capture_output=True, text=True, input=input, timeout=600, encoding='utf-8')
        if ok and r.returncode != 0: raise AssertionError(f"qmd-nb {' '.join(map(str, args))} exited {r.returncode}: {r.stderr}")
        return r
    def json(self, *args): return json.loads(self(*args).stdout)

@pytest.fixture
def qmd(tmp_path): return Qmd(tmp_path/'home')

def write_tree(root:Path, files:dict) -> Path:
    "Create files (relative path -> text or bytes) under root."
    for rel, body in files.items():
        p = root/rel; p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body) if isinstance(body, bytes) else p.write_text(body, encoding='utf-8')
    return root

NOTES = {
    'backup.md': "---\ntitle: Backup strategy\ntags: [ops, storage]\nauthor: ana\n---\n# Backups\n\nUse rsync to copy files to the NAS every night.\nKeep three copies of important data.\n",
    'cooking/pasta.md': "# Pasta\n\nBoil water, add salt, cook the pasta for nine minutes.\n",
    'cooking/café.md': "# Café crème\n\nUn café crème, s'il vous plaît.\n",
    'journals/2025-05-01.md': "# May 1\n\nMeeting about the rsync daemon migration.\n" + "\n".join(f"line {i}" for i in range(5, 60)),
    'journals/2025-05-02.md': "# May 2\n\nNotes on backups.\n",
    'journals/2025-06-01.md': "# June 1\n\nHoliday.\n",
    'tokyo.md': "# 東京\n\n東京都に住んでいます。\n",
    'big.md': "# Big\n\n" + ("lorem ipsum dolor sit amet " * 800),
    '.hidden/secret.md': "# Secret\n\nrsync password\n",
    'node_modules/pkg/readme.md': "# Pkg\n\nrsync\n",
    'bad.md': b"\xff\xfe\x00 not text",
}

@pytest.fixture
def notes(tmp_path): return write_tree(tmp_path/'notes', NOTES)

# The attackers' client (tests/test_security*.py): the system Python's standard library only, run as `nobody`; each test's
# attacker script starts with these and adds its own steps.
ATTACKER_LIB = r'''
import http.client, json, socket, sys

def request(port, method, path, body=None, headers=None, timeout=300, src='127.0.0.1'):
    "One HTTP request on its own connection: status, headers (lower-case names) and body (status -1 when it failed)."
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=timeout, source_address=(src, 0))
    h = dict(headers or {})
    data = None if body is None else body.encode() if isinstance(body, str) else json.dumps(body).encode()
    if data is not None: h.setdefault('Content-Type', 'application/json')
    try:
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        return dict(status=r.status, headers={k.lower(): v for k, v in r.getheaders()}, body=r.read(400000).decode('utf-8', 'replace'))
    except OSError as e: return dict(status=-1, headers={}, body=f'{type(e).__name__}: {e}')
    finally: c.close()

def rpc_body(r):
    "The JSON-RPC message of an answer (a JSON body or the first SSE data line)."
    if r['headers'].get('content-type', '').startswith('text/event-stream'):
        return next((l[5:].strip() for l in r['body'].splitlines() if l.startswith('data:') and l[5:].strip()), '')
    return r['body']

def mcp_session(port, token, messages):
    "Initialize an MCP session over HTTP, send `messages` [(method, params)], close it: every answer (the initialize one first)."
    base = {'Accept': 'application/json, text/event-stream', **({'Authorization': 'Bearer ' + token} if token else {})}
    init = {'jsonrpc': '2.0', 'id': 0, 'method': 'initialize', 'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'attacker', 'version': '1'}}}
    r = request(port, 'POST', '/mcp', init, base); r['body'] = rpc_body(r)
    out = [dict(r, msg=init)]
    sid = r['headers'].get('mcp-session-id')
    h = {**base, **({'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-06-18'} if sid else {})}
    request(port, 'POST', '/mcp', {'jsonrpc': '2.0', 'method': 'notifications/initialized'}, h)
    for i, (method, params) in enumerate(messages, 1):
        m = {'jsonrpc': '2.0', 'id': i, 'method': method, 'params': params}
        r = request(port, 'POST', '/mcp', m, h); r['body'] = rpc_body(r)
        out.append(dict(r, msg=m))
    if sid: request(port, 'DELETE', '/mcp', None, h)
    return out
'''

def mount(*args) -> bool:
    "`mount` with these arguments (a read-only bind mount, a small tmpfs); False when not root or refused."
    if os.geteuid() != 0: return False
    return subprocess.run(['mount', *map(str, args)], capture_output=True).returncode == 0

@pytest.fixture
def mounts():
    "Mount points a test adds to the list it gets; unmounted after it, last first."
    done = []
    yield done
    for m in reversed(done): subprocess.run(['umount', '-l', str(m)], capture_output=True)
