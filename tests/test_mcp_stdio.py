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
    assert o['vsearch'].is_error and o['vsearch'].content[0].text == "Vector index not found. Run 'qmd-nb embed' first to create embeddings."
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
