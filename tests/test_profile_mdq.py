"The mdq profile over stdio: `qmd-nb mcp --tools mdq` as a subprocess, driven by the official SDK's client."
import asyncio, json
from conftest import QMD_BIN, write_tree

PAGES = {
    'docs/api/auth.md': "---\ntitle: Authentication Guide\nlabels: [documentation, security]\nauthor: john.doe@example.com\n"
                        "created: 2024-01-10T10:00:00Z\nupdated: 2024-06-15T14:30:00Z\n---\n# Authentication Guide\n\n"
                        "This guide covers how the gateway handles OAuth2 authentication flows for the API.\n",
    'docs/api/errors.md': "---\nlabels: [documentation]\nauthor: ana@example.com\ncreated: 2023-03-01\nupdated: 2023-04-01\n---\n"
                          "# Error codes\n\nAuthentication failures answer 401.\n",
    'runbooks/backup.md': "---\ntags: ops\nauthor: ben@example.com\ncreated: 2025-02-01\n---\n# Backups\n\nNightly rsync to the NAS.\n",
}

async def _session(qmd, fn):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    async with Client(StdioServerParameters(command=QMD_BIN, args=['mcp', '--tools', 'mdq'], env=qmd.env)) as c: return await fn(c)

async def _error(c, tool, args):
    from mcp.shared.exceptions import MCPError
    try: await c.call_tool(tool, args)
    except MCPError as e: return e.code, e.message
    raise AssertionError(f"{tool} {args} did not fail")

def test_no_sources(qmd):
    r = qmd('mcp', '--tools', 'mdq', ok=False, input='')
    assert (r.returncode, r.stderr.strip()) == (6, 'Error: No sources provided and no sources registered')

def test_sources_cli(qmd, tmp_path):
    wiki = write_tree(tmp_path/'a'/'wiki', PAGES); other = write_tree(tmp_path/'b'/'wiki', {'x.md': '# X\n'})
    assert "Added source 'wiki'" in qmd('source', 'add', '-s', wiki, '-d', 'Team wiki').stdout
    assert "Added source 'b-wiki'" in qmd('source', 'add', '-s', other, '-d', 'Other wiki').stdout
    clash = qmd('source', 'add', '-s', f'wiki:{tmp_path}', '-d', 'x', ok=False)
    assert clash.returncode != 0 and "Source name 'wiki' is already used" in clash.stderr
    listed = qmd('source', 'list').stdout
    assert 'wiki' in listed and 'Team wiki' in listed and 'Other wiki' in listed
    qmd('source', 'remove', 'b-wiki')
    assert 'Other wiki' not in qmd('source', 'list').stdout
    other.joinpath('x.md').unlink(); qmd('source', 'add', '-s', other, '-d', 'Soon gone'); other.joinpath('x.md').touch()
    import shutil; shutil.rmtree(other)
    r = qmd('mcp', '--tools', 'mdq', ok=False, input='')
    assert r.returncode == 6 and r.stderr.startswith('Error: Some registered source paths no longer exist')

def test_mdq_contract(qmd, tmp_path):
    wiki = write_tree(tmp_path/'wiki', PAGES); journal = write_tree(tmp_path/'journal', {'may.md': "---\ntags: [personal]\n---\n# May\n\nRead about OAuth2.\n"})
    qmd('source', 'add', '-s', wiki, '-d', 'Team wiki: API guides and runbooks')
    qmd('source', 'add', '-s', f'notes:{journal}', '-d', 'Personal journal')
    (wiki/'escape').symlink_to('/etc')
    async def run(c):
        o = {'tools': {t.name: t for t in (await c.list_tools()).tools}, 'intro': c.instructions}
        o['search'] = await c.call_tool('search', {'query': 'authentication', 'labels': ['security', 'ops']})
        o['all'] = await c.call_tool('search', {'query': 'oauth2 authentication'})
        o['source'] = await c.call_tool('search', {'query': 'oauth2', 'source': 'notes'})
        o['dated'] = await c.call_tool('search', {'query': 'authentication', 'created_before': '2024-01-01', 'updated_within': '100y'})
        o['sorted'] = await c.call_tool('search', {'query': 'authentication', 'sort': 'created_at', 'limit': 5})
        o['stale'] = await c.call_tool('search', {'query': 'authentication rsync', 'stale': '1y', 'author': 'ANA@example.com'})
        o['page'] = await c.call_tool('read_page', {'path': 'docs/api/auth.md', 'source': 'wiki'})
        o['byid'] = await c.call_tool('read_page', {'id': 'may'})
        o['errors'] = [await _error(c, t, a) for t, a in [
            ('search', {'query': 'x', 'limit': 0}), ('search', {'query': 'x', 'limit': 'many'}), ('search', {'query': ''}),
            ('search', {'query': 'x', 'created_after': 'yesterday'}), ('search', {'query': 'x', 'sort': 'title'}),
            ('search', {'query': 'x', 'stale': 'forever'}), ('search', {'query': 'x', 'labels': 'ops'}), ('search', {'query': 'x', 'source': 'nope'}),
            ('read_page', {'path': 'docs/nope.md'}), ('read_page', {'id': 'nope'}), ('read_page', {'path': '../journal/may.md'}),
            ('read_page', {'path': '/etc/passwd'}), ('read_page', {'path': 'escape/passwd', 'source': 'wiki'}), ('read_page', {})]]
        return o
    o = asyncio.run(_session(qmd, run))
    assert set(o['tools']) == {'search', 'read_page'}
    assert '- wiki: Team wiki: API guides and runbooks' in o['tools']['search'].description and '- notes: Personal journal' in o['tools']['read_page'].description
    assert 'notes (1 page): Personal journal' in o['intro']
    props = o['tools']['search'].input_schema['properties']
    assert set(props) == {'query', 'source', 'limit', 'labels', 'author', 'created_after', 'created_before', 'updated_after', 'updated_before',
                          'created_within', 'updated_within', 'stale', 'sort'}
    assert props['sort']['enum'] == ['created_at', '-created_at', 'updated_at', '-updated_at'] and o['tools']['search'].input_schema['required'] == ['query']
    s = o['search']
    assert json.loads(s.content[0].text) == s.structured_content
    assert s.structured_content == {'results': [{'id': 'docs-api-auth', 'title': 'Authentication Guide', 'path': 'docs/api/auth.md', 'source': 'wiki',
        'snippet': 'Authentication Guide This guide covers how the gateway handles OAuth2 authentication flows for the API.',
        'labels': ['documentation', 'security'], 'author': 'john.doe@example.com', 'created_at': '2024-01-10T10:00:00Z',
        'updated_at': '2024-06-15T14:30:00Z'}], 'total': 1, 'query': 'authentication'}
    ids = lambda r: [x['id'] for x in r.structured_content['results']]
    assert set(ids(o['all'])) == {'docs-api-auth', 'docs-api-errors', 'may'} and o['all'].structured_content['total'] == 3
    assert ids(o['source']) == ['may'] and o['source'].structured_content['results'][0]['source'] == 'notes'
    assert ids(o['dated']) == ['docs-api-errors']
    assert ids(o['sorted']) == ['docs-api-errors', 'docs-api-auth']
    assert ids(o['stale']) == ['docs-api-errors']
    p = o['page'].structured_content
    assert (p['id'], p['path'], p['source'], p['title']) == ('docs-api-auth', 'docs/api/auth.md', 'wiki', 'Authentication Guide')
    assert p['content'] == PAGES['docs/api/auth.md'] and p['metadata']['labels'] == ['documentation', 'security']
    assert o['byid'].structured_content['path'] == 'may.md'
    codes = {c for c, _ in o['errors']}
    assert codes == {-32602}, o['errors']
    m = [msg for _, msg in o['errors']]
    assert m[0] == 'Invalid params: limit must be an integer from 1 to 100 (got 0)'
    assert m[1] == "Invalid params: limit must be an integer from 1 to 100 (got 'many')"
    assert m[2] == 'Invalid params: query must be a non-empty string'
    assert m[3].startswith('Invalid params: created_after') and m[4].startswith('Invalid params: sort') and m[5].startswith('Invalid params: stale')
    assert m[6].startswith('Invalid params: labels') and m[7].startswith("Invalid params: unknown source 'nope'")
    assert m[8:10] == ['File not found: docs/nope.md', 'File not found: nope']
    assert "'..' is not allowed" in m[10] and 'outside the indexed sources' in m[11] and 'leads outside the source wiki' in m[12]
    assert m[13] == 'Invalid params: give either path or id'

def test_search_error(qmd, tmp_path):
    "A search that fails in the engine answers -32603 `Search error: ...` (here: there are vectors but the model cannot load)."
    import sqlite3
    wiki = write_tree(tmp_path/'wiki', PAGES)
    qmd('source', 'add', '-s', wiki, '-d', 'Team wiki')
    with sqlite3.connect(qmd.home/'cache'/'index'/'catalog.sqlite') as db: db.execute("INSERT INTO embedded VALUES('0' , 'fp', 1)")
    qmd.env['QMD_NB_EMBED_MODEL'] = str(tmp_path/'no-such-model')
    async def run(c): return await _error(c, 'search', {'query': 'authentication'})
    code, msg = asyncio.run(_session(qmd, run))
    assert code == -32603 and msg.startswith('Search error: '), (code, msg)

def test_sources_for_one_run(qmd, tmp_path):
    "`mcp -s PATH -d TEXT` (mdq's command line): the server sees those folders alone; a new one is indexed, not registered; a known one reused."
    wiki = write_tree(tmp_path/'wiki', PAGES); journal = write_tree(tmp_path/'journal', {'may.md': '# May\n\nRead about OAuth2 authentication.\n'})
    qmd('source', 'add', '-s', wiki, '-d', 'Team wiki')
    async def run(c):
        found = await c.call_tool('search', {'query': 'authentication'})
        return [r['path'] for r in json.loads(found.content[0].text)['results']], await _error(c, 'search', {'query': 'x', 'source': 'wiki'})
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    async def session():
        args = ['mcp', '--tools', 'mdq', '-s', f'notes:{journal}', '-d', 'Personal journal']
        async with Client(StdioServerParameters(command=QMD_BIN, args=args, env=qmd.env)) as c: return await run(c)
    paths, other = asyncio.run(session())
    assert paths == ['may.md'] and other[0] == -32602 and 'wiki' in other[1] # the registered wiki is not served in this run
    assert 'notes' not in qmd('source', 'list').stdout and 'wiki' in qmd('source', 'list').stdout # indexed for the run, not registered
    async def later(): # a run without -s: the registered sources alone (the contract's resolution order)
        async with Client(StdioServerParameters(command=QMD_BIN, args=['mcp', '--tools', 'mdq'], env=qmd.env)) as c:
            return [r['path'] for r in json.loads((await c.call_tool('search', {'query': 'oauth2 authentication'})).content[0].text)['results']]
    assert 'may.md' not in asyncio.run(later())
    bad = qmd('mcp', '--tools', 'mdq', '-s', wiki, ok=False, input='')
    assert bad.returncode == 1 and 'Give each source (-s) its description (-d)' in bad.stderr
    cfg = json.loads(qmd('mcp', '--tools', 'mdq', '--print-config').stdout.split('\n\n')[1])
    assert cfg['mcpServers']['qmd-nb']['args'][-3:] == ['mcp', '--tools', 'mdq']
