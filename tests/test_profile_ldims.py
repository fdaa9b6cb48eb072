"The ldims profile's contract over stdio: `qmd-nb mcp --tools ldims` as a subprocess, driven by the SDK's client."
import asyncio, json, sqlite3, uuid
import pytest
from conftest import QMD_BIN, write_tree

LIBRARY = {
    'q4-sales-strategy.md': '---\nauthor: John Doe\ncreated: 2023-12-01T10:00:00Z\ntype: Strategy Document\n---\n# Q4 2023 Sales Strategy\n\nGrow enterprise sales by 20% with a partner programme.\n',
    'service-plan.md': '---\nauthor: Mei Lin\ncreated: 2024-03-05\n---\n# Customer service improvement plan\n\nKey metrics: first response time and customer satisfaction.\n',
    'q3-sales-review.md': '---\nauthor: John Doe\ncreated: 2023-09-30\n---\n# Q3 sales review\n\nSales grew 5% in the third quarter.\n',
    'scan.pdf': b'%PDF-1.4 not really a pdf',
}

async def _session(qmd, fn, env=None):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    params = StdioServerParameters(command=QMD_BIN, args=['mcp', '--tools', 'ldims'], env={**qmd.env, **(env or {})})
    async with Client(params) as c: return await fn(c)

async def search(c, args):
    r = await c.call_tool('searchDocuments', args)
    body = json.loads(r.content[0].text)
    assert r.is_error == body['isError']
    return body

async def read(c, doc_id):
    "(contents, None) or (None, (code, data)) for a read of the resource."
    from mcp.shared.exceptions import MCPError
    try: return (await c.read_resource(f'ldims://docs/{doc_id}/extracted_content')).contents[0], None
    except MCPError as e: return None, (e.code, e.data)

@pytest.fixture
def library(qmd, tmp_path):
    root = write_tree(tmp_path/'library', LIBRARY)
    qmd('collection', 'add', root, '--name', 'library', '--mask', '**/*.md,**/*.pdf')
    return root

def doc_id(path): 
    from qmd_nb.engine.ingest import doc_uuid
    return doc_uuid('library', path)

def test_ldims_contract(qmd, library):
    (library/'new.md').write_text('# Not indexed yet\n', encoding='utf-8')
    async def run(c):
        o = {'tools': {t.name: t for t in (await c.list_tools()).tools},
             'templates': [t.uri_template for t in (await c.list_resource_templates()).resource_templates]}
        o['sem'] = await search(c, {'query': 'sales strategy'})
        o['exact'] = await search(c, {'query': '"sales review"', 'filters': {'searchMode': 'exact'}})
        o['dated'] = await search(c, {'query': 'sales', 'maxResults': 10, 'filters': {'dateFrom': '2023-10-01', 'dateTo': '2023-12-31', 'submitter': 'John Doe'}})
        o['typed'] = await search(c, {'query': 'sales', 'filters': {'documentType': 'Strategy Document', 'searchMode': 'exact'}})
        o['none'] = await search(c, {'query': 'zebra'})
        o['doc'] = await read(c, o['sem']['results'][0]['documentId'])
        o['processing'] = await read(c, doc_id('new.md'))
        o['missing'] = await read(c, str(uuid.uuid4()))
        o['failed'] = await read(c, doc_id('scan.pdf'))
        return o
    o = asyncio.run(_session(qmd, run))
    assert list(o['tools']) == ['searchDocuments'] and o['templates'] == ['ldims://docs/{document_id}/extracted_content']
    s = o['sem']
    assert set(s) == {'results', 'totalMatches', 'searchMetadata', 'isError'} and s['isError'] is False
    top = s['results'][0]
    assert set(top) == {'documentId', 'documentName', 'relevanceScore', 'matchedContext', 'metadata'}
    assert top['documentName'] == 'q4-sales-strategy.md' and top['documentId'] == doc_id('q4-sales-strategy.md')
    assert top['metadata'] == {'createdAt': '2023-12-01T10:00:00Z', 'submitter': 'John Doe', 'documentType': 'Strategy Document'}
    assert 0 < top['relevanceScore'] <= 1 and 'partner programme' in top['matchedContext']
    assert s['searchMetadata']['searchMode'] == 'semantic' and s['searchMetadata']['engine'] == 'keyword' # no embeddings: keyword search
    assert s['searchMetadata']['executionTime'].endswith('s') and s['totalMatches'] == 2
    assert [r['documentName'] for r in o['exact']['results']] == ['q3-sales-review.md'] and o['exact']['searchMetadata']['searchMode'] == 'exact'
    assert [r['documentName'] for r in o['dated']['results']] == ['q4-sales-strategy.md']
    assert [r['documentName'] for r in o['typed']['results']] == ['q4-sales-strategy.md']
    assert (o['none']['results'], o['none']['totalMatches'], o['none']['isError']) == ([], 0, False)
    doc, _ = o['doc']
    assert doc.text.startswith('---\nauthor: John Doe') and doc.mime_type == 'text/plain'
    assert doc.meta['documentName'] == 'q4-sales-strategy.md' and doc.meta['format'] == 'md' and doc.meta['extractedAt'].endswith('Z')
    p, _ = o['processing']
    assert p.mime_type == 'application/json' and json.loads(p.text)['status'] == 'processing' and p.meta['status'] == 'processing'
    assert o['missing'][1][0] == -32602 and o['missing'][1][1]['errorCode'] == 'RESOURCE_NOT_FOUND' and o['missing'][1][1]['isError'] is True
    code, data = o['failed'][1]
    assert code == -32603 and data['errorCode'] == 'CONTENT_UNAVAILABLE_OR_FAILED' and data['errorDetails']['file'] == 'library/scan.pdf'

def test_ldims_errors(qmd, library):
    async def run(c):
        o = {}
        for k, args in dict(empty={'query': ''}, absent={}, qtype={'query': 5}, zero={'query': 'sales', 'maxResults': 0},
                            mrtype={'query': 'sales', 'maxResults': 'ten'}, ftype={'query': 'sales', 'filters': 'recent'},
                            fkey={'query': 'sales', 'filters': {'owner': 'x'}}, mode={'query': 'sales', 'filters': {'searchMode': 'fuzzy'}},
                            date={'query': 'sales', 'filters': {'dateFrom': 'yesterday'}},
                            order={'query': 'sales', 'filters': {'dateFrom': '2024-01-01', 'dateTo': '2023-01-01'}},
                            broad={'query': 'the of and'}, excl={'query': '-sales'}).items():
            o[k] = await search(c, args)
        o['capped'] = await search(c, {'query': 'sales', 'maxResults': 500})
        return o
    o = asyncio.run(_session(qmd, run, env={'SEARCH_MAX_RESULTS_HARD_LIMIT': '1', 'LOG_LEVEL': 'DEBUG'}))
    fields = dict(empty='query', absent='query', qtype='query', zero='maxResults', mrtype='maxResults', ftype='filters', fkey='filters.owner',
                  mode='filters.searchMode', date='filters.dateFrom', order='filters.dateFrom')
    for k, f in fields.items():
        assert o[k]['isError'] is True and o[k]['errorCode'] == 'INVALID_INPUT' and o[k]['errorDetails']['field'] == f, k
        assert o[k]['errorMessage'].startswith('Invalid input parameters provided') and o[k]['errorDetails']['issue']
    assert o['empty']['errorDetails']['issue'] == 'Query cannot be empty'
    for k in ('broad', 'excl'): assert o[k]['errorCode'] == 'QUERY_UNPROCESSABLE', k
    c = o['capped']
    assert len(c['results']) == 1 and c['totalMatches'] == 2 and c['searchMetadata']['maxResultsCapped'] == {'requested': 500, 'limit': 1}

def test_ldims_timeout_and_backend_error(qmd, library):
    t = asyncio.run(_session(qmd, lambda c: search(c, {'query': 'sales'}), env={'MCP_REQUEST_TIMEOUT_SECONDS': '0.000001'}))
    assert t['isError'] and t['errorCode'] == 'SEARCH_TIMEOUT' and t['errorMessage'].startswith('The search operation timed out')
    from qmd_nb.engine.store import Store
    async def broken(c):
        assert (await search(c, {'query': 'sales'}))['totalMatches'] == 2
        with sqlite3.connect(Store(env=qmd.env).paths.db) as db: db.execute("DROP TABLE documents")
        return await search(c, {'query': 'sales'})
    b = asyncio.run(_session(qmd, broken))
    assert b['isError'] and b['errorCode'] == 'BACKEND_API_ERROR' and 'documents' in b['errorDetails']['message']

def test_ldims_log_level(qmd, library, tmp_path):
    "LOG_LEVEL=INFO writes one line per search to stderr (stdout is the protocol)."
    import subprocess, sys
    from conftest import ROOT
    script = ("import asyncio, json, sys\nsys.path.insert(0, %r)\nfrom test_profile_ldims import _session, search\n" % str(ROOT/'tests')) + \
             "class Q: env = json.loads(sys.argv[1])\nprint(asyncio.run(_session(Q, lambda c: search(c, {'query': 'sales'}), env={'LOG_LEVEL': sys.argv[2]}))['totalMatches'])\n"
    outs = {lvl: subprocess.run([sys.executable, '-c', script, json.dumps(qmd.env), lvl], capture_output=True, text=True, timeout=120, encoding='utf-8') for lvl in ('INFO', 'ERROR')}
    assert outs['INFO'].stdout.strip() == '2' and 'qmd-nb ldims: INFO searchDocuments {"query": "sales"' in outs['INFO'].stderr
    assert 'searchDocuments' not in outs['ERROR'].stderr
