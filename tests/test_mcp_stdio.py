"The MCP server as a subprocess over stdio, driven by the official SDK's client."
import asyncio
from conftest import QMD_BIN

async def _session(qmd, fn):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    params = StdioServerParameters(command=QMD_BIN, args=['mcp'], env=qmd.env)
    async with Client(params) as c: return await fn(c)

def test_stdio_contract(qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes')
    qmd('context', 'add', 'qmd://notes/journals', 'Daily journal entries')
    async def run(c):
        out = {}
        out['tools'] = {t.name: t for t in (await c.list_tools()).tools}
        out['search'] = await c.call_tool('search', {'query': 'rsync', 'limit': 5})
        out['empty'] = await c.call_tool('search', {'query': 'zebra'})
        out['vsearch'] = await c.call_tool('vsearch', {'query': 'keeping files safe'})
        out['query'] = await c.call_tool('query', {'query': 'rsync copy'})
        out['get'] = await c.call_tool('get', {'file': 'journals/2025-05-01.md:3', 'maxLines': 2, 'lineNumbers': True})
        out['missing'] = await c.call_tool('get', {'file': 'notes/bakup.md'})
        out['multi'] = await c.call_tool('multi_get', {'pattern': 'notes/big.md, pasta.md'})
        out['status'] = await c.call_tool('status', {})
        out['bad'] = await c.call_tool('search', {'query': 'x', 'limit': 'many'})
        out['doc'] = await c.read_resource('qmd://notes%2Fcooking%2Fpasta.md')
        out['prompt'] = await c.get_prompt('query')
        return out
    o = asyncio.run(_session(qmd, run))
    assert set(o['tools']) == {'search', 'vsearch', 'query', 'get', 'multi_get', 'status'}
    assert o['tools']['search'].annotations.read_only_hint is True and o['tools']['search'].output_schema
    s = o['search']
    assert s.content[0].text.startswith('Found 2 results for "rsync":') and s.structured_content['results'][0]['file'] == 'notes/backup.md'
    assert o['empty'].content[0].text == 'No results found for "zebra"'
    assert o['vsearch'].is_error and o['vsearch'].content[0].text == "Vector index not found. Run 'qmd embed' first to create embeddings."
    assert o['query'].structured_content['results'][0]['file'] == 'notes/backup.md' # no vectors: keyword search
    g = o['get'].content[0].resource
    assert g.uri == 'qmd://notes/journals/2025-05-01.md' and g.text == '<!-- Context: Daily journal entries -->\n\n3: Meeting about the rsync daemon migration.\n4: line 5\n\n[... truncated 54 more lines]'
    assert o['missing'].is_error and 'Did you mean one of these?\n  - notes/backup.md' in o['missing'].content[0].text
    m = o['multi'].content
    assert m[0].text == 'Errors:\nFile too large: notes/big.md (skipped)' and m[1].text.startswith('[SKIPPED: notes/big.md - File too large (21KB).')
    assert o['status'].structured_content['totalDocuments'] == 8 and o['status'].content[0].text.startswith('QMD Index Status:')
    assert o['bad'].is_error and 'limit' in o['bad'].content[0].text
    assert o['doc'].contents[0].text.split('\n')[0] == '1: # Pasta'
    assert o['prompt'].messages[0].content.text.startswith('# QMD - Quick Markdown Search')

# -- the handshake answered before the SDK is imported (qmd_nb.serve.stdio) ---------------------------------------------------

def _run_raw(env, *msgs) -> tuple[list[dict], str]:
    "Start `qmd-nb mcp`, send `msgs` all at once (no waiting between them), collect one answer per request; (answers, stderr)."
    import json, subprocess
    p = subprocess.Popen([QMD_BIN, 'mcp'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdin.write(b''.join(json.dumps(m).encode() + b'\n' for m in msgs)); p.stdin.flush()
    answers = [json.loads(p.stdout.readline() or b'null') for m in msgs if 'id' in m]
    p.stdin.close()
    rest, err = p.stdout.read(), p.stderr.read()
    assert p.wait(timeout=30) == 0 and rest == b'', (p.returncode, rest, err)
    return answers, err.decode()

def _hello(version, i=1):
    return {'jsonrpc': '2.0', 'id': i, 'method': 'initialize',
            'params': {'protocolVersion': version, 'capabilities': {}, 'clientInfo': {'name': 'pytest', 'version': '0'}}}

INITIALIZED = {'jsonrpc': '2.0', 'method': 'notifications/initialized'}
SEARCH = {'jsonrpc': '2.0', 'id': 'q', 'method': 'tools/call', 'params': {'name': 'search', 'arguments': {'query': 'rsync'}}}

def test_cached_handshake_answers_as_the_sdk_does(qmd, notes):
    "Every revision (and an unknown one) answered by the SDK on the first start, from the cache on the second: the same."
    import json
    qmd('collection', 'add', notes, '--name', 'notes')
    cache = qmd.home/'cache'/'index'/'mcp-initialize.json'
    for v in ('2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', '1999-01-01'):
        (sdk, s1), err1 = _run_raw(qmd.env, _hello(v), INITIALIZED, SEARCH)
        assert v in json.loads(cache.read_text(encoding='utf-8'))['answers']
        (fast, s2), err2 = _run_raw(qmd.env, _hello(v), INITIALIZED, SEARCH) # pipelined: nothing after the first line is lost
        assert fast == sdk and fast['result']['protocolVersion'] == (v if v != '1999-01-01' else '2025-11-25'), (v, fast)
        assert s1['result']['structuredContent']['results'][0]['file'] == 'notes/backup.md' and s2 == s1
        assert 'initialize' not in err1 + err2 # no warnings: the cache agreed with the SDK
    from conftest import write_tree
    qmd('collection', 'add', write_tree(notes.parent/'food', {'pasta.md': '# Pasta\n', 'soup.md': '# Soup\n'}), '--name', 'food') # the index summary is computed afresh, not cached
    (fast, _), _ = _run_raw(qmd.env, _hello('2025-11-25'), INITIALIZED, SEARCH)
    assert 'food (2 docs)' in fast['result']['instructions'], fast

def test_stale_handshake_cache_is_noticed_and_refreshed(qmd, notes):
    import json
    qmd('collection', 'add', notes, '--name', 'notes')
    cache = qmd.home/'cache'/'index'/'mcp-initialize.json'
    (sdk, _), _ = _run_raw(qmd.env, _hello('2025-11-25', 'a'), INITIALIZED, SEARCH)
    d = json.loads(cache.read_text(encoding='utf-8')); d['answers']['2025-11-25']['capabilities']['experimental'] = {'stale': {}}
    cache.write_text(json.dumps(d), encoding='utf-8')
    (stale, s), err = _run_raw(qmd.env, _hello('2025-11-25', 'a'), INITIALIZED, SEARCH)
    assert stale['result']['capabilities']['experimental'] == {'stale': {}} # answered from the cache, before the SDK
    assert 'the cached answer differed' in err and s['result']['structuredContent']['results'] # warned; the session goes on
    (fresh, _), err = _run_raw(qmd.env, _hello('2025-11-25', 'a'), INITIALIZED, SEARCH)
    assert fresh == sdk and 'initialize' not in err
    d['key'] = 'another SDK'; cache.write_text(json.dumps(d), encoding='utf-8') # a cache of another SDK version or server is not used
    (other,), err = _run_raw(qmd.env, _hello('2025-11-25', 'a'), INITIALIZED)
    assert other == sdk and 'initialize' not in err
    cache.write_text('{damaged', encoding='utf-8')
    (again, _), _ = _run_raw(qmd.env, _hello('2025-11-25', 'a'), INITIALIZED, SEARCH)
    assert again == sdk

def test_malformed_first_messages_reach_the_sdk(qmd, notes):
    qmd('collection', 'add', notes, '--name', 'notes')
    _run_raw(qmd.env, _hello('2025-11-25')) # fill the cache
    bad = dict(_hello('2025-11-25'), params={'protocolVersion': '2025-11-25', 'capabilities': {}}) # no clientInfo
    (refused,), _ = _run_raw(qmd.env, bad)
    assert refused['error']['code'] == -32602, refused # the SDK's answer, not the cache's
    import json, subprocess
    p = subprocess.Popen([QMD_BIN, 'mcp'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=qmd.env)
    p.stdin.write(b'not json\n{"jsonrpc": "2.0", "id": 3, "method": "ping"}\n'); p.stdin.flush()
    parse_error = json.loads(p.stdout.readline()) # JSON-RPC answers a line that is no JSON (the SDK alone said nothing)
    assert (parse_error['id'], parse_error['error']['code']) == (None, -32700), parse_error
    assert p.stdout.readline() == b'{"jsonrpc":"2.0","id":3,"result":{}}\n' # and the session goes on
    p.stdin.close(); assert p.wait(timeout=30) == 0
