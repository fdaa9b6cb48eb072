"""An independent client: the MCP Inspector's command line (npm @modelcontextprotocol/inspector, on Node 22 via
tools/node.sh) starts `qmd-nb mcp` over stdio, lists the tools and calls `search`; and over Streamable HTTP it reaches
`qmd-nb serve` with a bearer token in its `--header`, is refused without one, and gets one itself by OAuth (dynamic
registration, PKCE, the consent page approved by a stand-in browser that types the admin token)."""
import json, os, subprocess, sys
import pytest
from conftest import QMD_BIN, ROOT

INSPECTOR = '@modelcontextprotocol/inspector@2.12.0'
NODE_SH = str(ROOT/'tools'/'node.sh')

@pytest.fixture(scope='session')
def inspector(tmp_path_factory):
    "A function running the Inspector CLI against a stdio server; skipped only when npm's registry is unreachable."
    state = tmp_path_factory.mktemp('inspector') # its catalog and client config, kept out of $HOME
    env_over = {'MCP_CATALOG_PATH': str(state/'mcp.json'), 'MCP_CLIENT_CONFIG_PATH': str(state/'client.json')}
    env = {**os.environ, **env_over}
    def run(server_env:dict, *args, check=True, target=None, extra_env=None):
        target = target or [*[x for k, v in server_env.items() for x in ('-e', f'{k}={v}')], QMD_BIN, 'mcp']
        cmd = [NODE_SH, '-y', INSPECTOR, '--cli', *target, *args]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**env, **(extra_env or {})}, cwd=state)
        if check: assert r.returncode == 0, f"inspector exited {r.returncode}: {r.stderr[-3000:]}"
        return r
    r = subprocess.run([NODE_SH, '-y', INSPECTOR, '--version'], capture_output=True, text=True, timeout=600, cwd=state, env=env)
    if r.returncode != 0:
        ping = subprocess.run(['npm', 'ping'], capture_output=True, text=True, timeout=60)
        if ping.returncode != 0: pytest.skip(f"npm registry unreachable, cannot install Node 22 / {INSPECTOR}: {(ping.stderr or ping.stdout)[-500:]}")
        raise AssertionError(f"tools/node.sh -y {INSPECTOR} failed ({r.returncode}): {r.stderr[-2000:]}")
    return run

def test_inspector_lists_tools_and_searches(inspector, qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes')
    env = {'QMD_NB_HOME': str(qmd.home), 'HF_HUB_OFFLINE': '1'}
    tools = json.loads(inspector(env, '--method', 'tools/list').stdout)['tools']
    by_name = {t['name']: t for t in tools}
    assert set(by_name) == {'search', 'vsearch', 'query', 'get', 'multi_get', 'status'}
    assert by_name['search']['inputSchema']['required'] == ['query'] and by_name['search']['annotations']['readOnlyHint'] is True
    assert 'results' in by_name['search']['outputSchema']['properties']
    r = json.loads(inspector(env, '--method', 'tools/call', '--tool-name', 'search', '--tool-arg', 'query=rsync', 'limit=5').stdout)
    assert r['isError'] is False
    assert r['content'][0]['text'].startswith('Found 2 results for "rsync":')
    assert [x['file'] for x in r['structuredContent']['results']] == ['notes/backup.md', 'notes/journals/2025-05-01.md']
    assert r['structuredContent']['results'][0]['snippet'].startswith('8: Use rsync')
    r = inspector(env, '--method', 'tools/call', '--tool-name', 'search', '--tool-arg', 'query=rsync', 'limit=0', check=False)
    assert r.returncode == 5 and 'tool_is_error' in r.stderr # the Inspector's exit code for a tool answering isError
    bad = json.loads(r.stdout)
    assert bad['isError'] is True and 'limit' in bad['content'][0]['text'] and 'greater than or equal to 1' in bad['content'][0]['text']

def test_inspector_over_http_with_a_bearer_header(inspector, qmd, notes, tmp_path):
    from test_rest import Server
    qmd('collection', 'add', notes, '--name', 'notes')
    other = tmp_path/'other'; other.mkdir(); (other/'x.md').write_text('# Other\n\nrsync elsewhere\n')
    qmd('collection', 'add', other, '--name', 'other')
    reader = qmd('token', 'create', '--scope', 'read', '--collections', 'notes', '--name', 'inspector').stdout.strip()
    s = Server(qmd)
    try:
        call = ['--method', 'tools/call', '--tool-name', 'search', '--tool-arg', 'query=rsync']
        http = lambda *h: [s.url + '/mcp', '--transport', 'http', *[x for v in h for x in ('--header', v)]]
        full = json.loads(inspector({}, *call, target=http(f'Authorization: Bearer {s.token}')).stdout)
        assert {r['file'] for r in full['structuredContent']['results']} == {'notes/backup.md', 'notes/journals/2025-05-01.md', 'other/x.md'}
        limited = json.loads(inspector({}, *call, target=http(f'Authorization: Bearer {reader}')).stdout)
        assert [r['file'] for r in limited['structuredContent']['results']] == ['notes/backup.md', 'notes/journals/2025-05-01.md']
        tools = json.loads(inspector({}, '--method', 'tools/list', target=http(f'Authorization: Bearer {reader}')).stdout)['tools']
        assert 'other' not in json.dumps(tools) # nothing names the collection it may not see
        anon = inspector({}, '--stored-auth-only', *call, target=http(), check=False)
        assert 'auth_required' in anon.stdout + anon.stderr and 'Authentication required' in anon.stdout + anon.stderr, (anon.stdout[-500:], anon.stderr[-500:])
        browser = tmp_path/'browser.py' # what the Inspector opens the authorization URL with: approves with the admin token
        browser.write_text(f"""#!{sys.executable}
import sys, httpx
with httpx.Client(timeout=30) as h:
    consent = h.get(sys.argv[1], follow_redirects=False).headers['location']
    r = h.post(consent.split('?')[0], data={{'request': consent.split('request=')[1], 'secret': {s.token!r}, 'scope': 'read', 'action': 'approve'}}, follow_redirects=False)
    h.get(r.headers['location'])
""")
        browser.chmod(0o755)
        oauth = inspector({}, *call, target=http(), extra_env={'MCP_AUTO_OPEN_ENABLED': 'true', 'BROWSER': str(browser)})
        assert {r['file'] for r in json.loads(oauth.stdout)['structuredContent']['results']} == {'notes/backup.md', 'notes/journals/2025-05-01.md', 'other/x.md'}
        grants = [l for l in qmd('token', 'list').stdout.splitlines() if '\toauth\t' in l]
        assert len(grants) == 1 and grants[0].startswith('oauth-MCP-Inspector-') and '\tread\t' in grants[0], grants
    finally: assert s.stop()[0] == 0
