"The recall profile's contract over stdio: `qmd-nb mcp --tools recall` as a subprocess, driven by the SDK's client."
import asyncio, json, sqlite3
from conftest import QMD_BIN

REACT = dict(title='React useState not updating state', problem_description='State variable not updating after setState call in React 18',
             root_cause="React 18's strict mode causes double rendering", solution='Use the functional update form: setState(prev => prev + 1)',
             context='const [count, setCount] = useState(0);\nsetCount(prev => prev + 1); // Correct', keywords=[' React', 'Hooks', 'state'])
DOCKER = dict(title='Docker volume permission denied', problem_description='Container cannot write to a bind-mounted volume',
              solution='Run the container with --user $(id -u):$(id -g)', keywords=['docker'],
              context='DATABASE_URL=postgres://app:<PASSWORD>@db/app\napi_key = "***"')

async def _session(qmd, fn, env=None):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    params = StdioServerParameters(command=QMD_BIN, args=['mcp', '--tools', 'recall'], env={**qmd.env, **(env or {})})
    async with Client(params) as c: return await fn(c)

def call(c, name, args):
    async def go():
        r = await c.call_tool(name, args)
        body = json.loads(r.content[0].text)
        assert body == r.structured_content and r.is_error == (not body['success'])
        return body
    return go()

def catalog(qmd):
    from qmd_nb.engine.store import Store
    return Store(env=qmd.env).paths.db

def counts(qmd) -> dict:
    "title -> query_count, read from the catalog after the servers exited."
    with sqlite3.connect(catalog(qmd)) as db: return dict(db.execute("SELECT title, query_count FROM experiences"))

def test_recall_contract(qmd):
    async def run(c):
        o = {'tools': {t.name: t for t in (await c.list_tools()).tools}}
        o['react'] = await call(c, 'submit_experience', REACT)
        o['docker'] = await call(c, 'submit_experience', DOCKER)
        o['q'] = await call(c, 'query_experiences', {'keywords': 'React useState hook not updating', 'limit': 10, 'offset': 0})
        o['page2'] = await call(c, 'query_experiences', {'keywords': 'docker react', 'limit': 1, 'offset': 1})
        o['none'] = await call(c, 'query_experiences', {'keywords': 'kubernetes'})
        return o
    o = asyncio.run(_session(qmd, run))
    assert set(o['tools']) == {'query_experiences', 'submit_experience'}
    assert o['tools']['submit_experience'].input_schema['required'] == ['title', 'problem_description', 'solution']
    assert o['react'] == {'success': True, 'data': {'id': o['react']['data']['id'], 'status': 'published',
                                                    'message': 'Experience record created and published successfully'}}
    d = o['q']['data']
    assert (d['total'], d['limit'], d['offset']) == (1, 10, 0)
    e = d['experiences'][0]
    assert set(e) == {'id', 'title', 'problem_description', 'root_cause', 'solution', 'context', 'keywords', 'query_count', 'created_at', 'relevance_score'}
    assert e['id'] == o['react']['data']['id'] and e['keywords'] == ['react', 'hooks', 'state'] and e['query_count'] == 0
    assert 0 < e['relevance_score'] <= 1 and e['created_at'].endswith('Z')
    assert o['page2']['data']['total'] == 2 and len(o['page2']['data']['experiences']) == 1
    assert o['none'] == {'success': True, 'data': {'experiences': [], 'total': 0, 'limit': 10, 'offset': 0}}
    # counts were written after the answers and before the server exited: two reads, one of them the React record's
    n = counts(qmd)
    assert sum(n.values()) == 2 and n[REACT['title']] >= 1

SECRETS = ['OPENAI_API_KEY=sk-proj-' + 'a' * 40, 'aws_access_key_id = AKIAIOSFODNN7EXAMPLE', 'git clone https://ghp_' + 'b' * 36 + '@github.com/x/y',
           'SLACK=xoxb-123456789012-abcdefghijkl', 'curl -H "Authorization: Bearer abcdef0123456789"', 'password=hunter2',
           'token: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
           '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----', 'postgres://admin:S3cr3t!@db.internal:5432/prod']

def test_recall_errors(qmd):
    base = dict(title='t', problem_description='p', solution='s')
    async def run(c):
        o = {}
        o['missing'] = await call(c, 'submit_experience', {'title': 'only a title'})
        o['blank'] = await call(c, 'submit_experience', dict(base, solution='   '))
        o['title'] = await call(c, 'submit_experience', dict(base, title='x' * 501))
        o['root'] = await call(c, 'submit_experience', dict(base, root_cause=''))
        o['kw'] = await call(c, 'submit_experience', dict(base, keywords=['ok', 'k' * 101]))
        o['types'] = await call(c, 'submit_experience', dict(base, keywords='react'))
        o['mixed'] = await call(c, 'submit_experience', dict(base, title='x' * 501, context='password=hunter2'))
        o['secrets'] = [await call(c, 'submit_experience', dict(base, context=s)) for s in SECRETS]
        o['clean'] = await call(c, 'submit_experience', dict(base, context='key: <API_KEY>\npassword=***\ntoken=[REDACTED]\nurl=${DATABASE_URL}'))
        for k, args in dict(kw_empty={'keywords': '  '}, kw_missing={}, kw_type={'keywords': 7}, lim0={'keywords': 'x', 'limit': 0},
                            lim51={'keywords': 'x', 'limit': 51}, lim_str={'keywords': 'x', 'limit': 'many'}, off={'keywords': 'x', 'offset': -1}).items():
            o[k] = await call(c, 'query_experiences', args)
        return o
    o = asyncio.run(_session(qmd, run))
    err = lambda k: o[k]['error']
    assert err('missing')['code'] == 'MISSING_REQUIRED_FIELDS' and [e['field'] for e in err('missing')['validation_errors']] == ['problem_description', 'solution']
    assert err('blank')['code'] == 'MISSING_REQUIRED_FIELDS'
    assert err('title')['code'] == 'INVALID_TITLE' and err('title')['validation_errors'][0]['field'] == 'title'
    assert err('root')['code'] == 'VALIDATION_ERROR' and err('root')['validation_errors'][0]['field'] == 'root_cause'
    assert err('kw')['code'] == 'VALIDATION_ERROR' and err('kw')['validation_errors'][0]['field'] == 'keywords[1]'
    assert err('types')['code'] == 'VALIDATION_ERROR'
    assert err('mixed')['code'] == 'VALIDATION_ERROR' and {e['field'] for e in err('mixed')['validation_errors']} == {'title', 'context'}
    for s, r in zip(SECRETS, o['secrets']):
        assert r['success'] is False and r['error']['code'] == 'CONTEXT_NOT_SANITIZED', s
        assert r['error']['validation_errors'][0]['field'] == 'context'
        assert 'hunter2' not in json.dumps(r) and 'AKIA' not in json.dumps(r) # the secret is never echoed
    assert o['clean']['success'] is True
    for k in ('kw_empty', 'kw_missing', 'kw_type'): assert err(k)['code'] == 'INVALID_KEYWORDS', k
    for k in ('lim0', 'lim51', 'lim_str'): assert err(k)['code'] == 'INVALID_LIMIT' and err(k)['details'] == {'field': 'limit'}, k
    assert err('off')['code'] == 'INVALID_LIMIT' and err('off')['details'] == {'field': 'offset'}

def test_recall_database_error_and_timeout(qmd):
    async def broken(c):
        assert (await call(c, 'submit_experience', REACT))['success']
        with sqlite3.connect(catalog(qmd)) as db: db.execute("DROP TABLE experiences")
        return await call(c, 'query_experiences', {'keywords': 'react'}), await call(c, 'submit_experience', REACT)
    q, s = asyncio.run(_session(qmd, broken))
    assert q['error']['code'] == 'DATABASE_ERROR' and s['error']['code'] == 'DATABASE_ERROR'
    slow = asyncio.run(_session(qmd, lambda c: call(c, 'query_experiences', {'keywords': 'react'}), env={'MCP_REQUEST_TIMEOUT_SECONDS': '0.000001'}))
    assert slow['error']['code'] == 'TIMEOUT'

def test_counts_under_concurrency(qmd):
    "Many concurrent queries from two clients: every read is counted once, none lost when the servers exit."
    async def submit(c):
        for x in (REACT, DOCKER): await call(c, 'submit_experience', x)
    async def one(c):
        rs = await asyncio.gather(*[call(c, 'query_experiences', {'keywords': 'react' if i % 3 else 'docker'}) for i in range(60)])
        return sum(len(r['data']['experiences']) for r in rs)
    async def other(c):
        rs = await asyncio.gather(*[call(c, 'query_experiences', {'keywords': 'react docker'}) for _ in range(40)])
        return sum(len(r['data']['experiences']) for r in rs)
    async def both(): return await asyncio.gather(_session(qmd, one), _session(qmd, other)) # two server processes on one index
    asyncio.run(_session(qmd, submit))
    assert asyncio.run(both()) == [60, 80]
    assert counts(qmd) == {REACT['title']: 40 + 40, DOCKER['title']: 20 + 40}
