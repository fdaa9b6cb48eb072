"""An independent client: the MCP Inspector's command line (npm @modelcontextprotocol/inspector, on Node 22 via
tools/node.sh) starts `qmd-nb mcp` over stdio, lists the tools and calls `search`."""
import json, os, subprocess
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
    def run(server_env:dict, *args, check=True):
        cmd = [NODE_SH, '-y', INSPECTOR, '--cli', *[x for k, v in server_env.items() for x in ('-e', f'{k}={v}')], QMD_BIN, 'mcp', *args]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=state, encoding='utf-8')
        if check: assert r.returncode == 0, f"inspector exited {r.returncode}: {r.stderr[-3000:]}"
        return r
    r = subprocess.run([NODE_SH, '-y', INSPECTOR, '--version'], capture_output=True, text=True, timeout=600, cwd=state, env=env, encoding='utf-8')
    if r.returncode != 0:
        ping = subprocess.run(['npm', 'ping'], capture_output=True, text=True, timeout=60, encoding='utf-8')
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
