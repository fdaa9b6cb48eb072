"""MCP over SSE (`GET /sse`, `POST /messages/?session_id=…`) on a real `qmd-nb serve --transport http` process, over a
real socket, with the MCP SDK's own SSE client where a client's view is wanted and raw HTTP where a refusal's status
is: the same token checks, scope checks, per-token sessions and limits as /mcp, and a stop that open streams do not hold up."""
import json, re, signal, subprocess, time
import anyio, httpx, pytest
from conftest import Qmd, NOTES, write_tree
from test_rest import Server

def rpc(i, method, params=None) -> dict: return {'jsonrpc': '2.0', 'id': i, 'method': method, 'params': params or {}}
INIT = rpc(0, 'initialize', {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'sse-test', 'version': '1'}})
INITIALIZED = {'jsonrpc': '2.0', 'method': 'notifications/initialized'}

@pytest.fixture(scope='module')
def vdb(tmp_path_factory):
    "A server of the vectordb contract over one collection, with tokens of each scope (the default one is admin)."
    root = tmp_path_factory.mktemp('sse')
    qmd = Qmd(root/'home')
    qmd('collection', 'add', write_tree(root/'notes', NOTES), '--name', 'notes')
    s = Server(qmd, '--tools', 'vectordb')
    s.tok = {k: qmd('token', 'create', '--scope', k.split('-')[0], '--name', k).stdout.strip() for k in ('read', 'read-2', 'write', 'read-cap', 'read-other')}
    s.tok['admin'] = s.token
    yield s
    code, out, err = s.stop()
    assert code == 0 and 'Traceback' not in err and 'ERROR' not in err, (code, err[-3000:])

def auth(token) -> dict: return {'Authorization': f'Bearer {token}'} if token else {}

# -- the SDK's own SSE client -------------------------------------------------------------------------------------------

async def _sdk(url, token, fn):
    from mcp import ClientSession
    from mcp.client.sse import sse_client
    async with sse_client(url + '/sse', headers=auth(token)) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        return await fn(s)

def sdk(server, token, fn): return anyio.run(_sdk, server.url, token, fn)

def test_sdk_client_lists_and_calls_tools(vdb):
    "The SDK's SSE client gets in with a token, sees the contract's tools, and `search` answers from the index."
    async def go(s):
        names = [t.name for t in (await s.list_tools()).tools]
        return names, await s.call_tool('search', {'query': 'rsync backups'}), await s.call_tool('list_libraries', {})
    names, found, libs = sdk(vdb, vdb.tok['admin'], go)
    assert {'search', 'ingest_file', 'ingest_url', 'list_documents', 'list_libraries', 'get_document', 'delete_document'} <= set(names), names
    assert not found.is_error and 'backup.md' in json.dumps(found.structured_content or found.content[0].text), found
    assert 'notes' in libs.content[0].text

def test_tools_of_a_read_token(vdb):
    "A read token's server leaves out the tools it may not call, as at /mcp; its reads work."
    async def go(s): return [t.name for t in (await s.list_tools()).tools], await s.call_tool('list_documents', {})
    names, docs = sdk(vdb, vdb.tok['read'], go)
    assert 'search' in names and not {'ingest_url', 'ingest_file', 'delete_document'} & set(names), names
    assert not docs.is_error

# -- raw HTTP: what each refusal is --------------------------------------------------------------------------------------

class Stream:
    "An open SSE stream: the path its first event names, and the JSON-RPC messages that come down it."
    def __init__(self, r): self.r, self.lines, self.path = r, r.aiter_lines(), None
    async def event(self) -> tuple[str, str]:
        kind = None
        async for l in self.lines:
            if l.startswith('event:'): kind = l[6:].strip()
            elif l.startswith('data:') and kind: return kind, l[5:].strip()
        raise EOFError("the stream ended")
    async def start(self):
        kind, self.path = await self.event()
        assert kind == 'endpoint' and re.fullmatch(r'/messages/\?session_id=[0-9a-f]{32}', self.path), (kind, self.path)
        return self
    async def message(self) -> dict:
        with anyio.fail_after(30):
            while True:
                kind, data = await self.event()
                if kind == 'message': return json.loads(data)

async def opened(c, stack, token) -> Stream:
    r = await stack.enter_async_context(c.stream('GET', '/sse', headers=auth(token)))
    assert r.status_code == 200 and r.headers['content-type'].startswith('text/event-stream'), r.status_code
    return await Stream(r).start()

async def handshake(c, st:Stream, token):
    assert (await c.post(st.path, json=INIT, headers=auth(token))).status_code == 202
    assert (await st.message())['id'] == 0
    assert (await c.post(st.path, json=INITIALIZED, headers=auth(token))).status_code == 202

def with_client(server, fn):
    "Run `fn(client, exit stack)` with an async HTTP client of the server."
    from contextlib import AsyncExitStack
    async def go():
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as c, AsyncExitStack() as stack: return await fn(c, stack)
    return anyio.run(go)

def test_no_token_no_stream_no_message(vdb):
    "Without a valid token both paths are 401 with the Bearer challenge, before anything of MCP is touched."
    c = httpx.Client(base_url=vdb.url, timeout=30)
    ping = rpc(1, 'ping')
    for r in (c.get('/sse'), c.get('/sse', headers=auth('qmdnb_deadbeef_' + 'A' * 43)), c.post('/messages/?session_id=' + 'a' * 32, json=ping),
              c.post('/messages/', json=ping, headers={'Authorization': 'Basic YWRtaW46YWRtaW4='})):
        assert r.status_code == 401 and r.headers['www-authenticate'].startswith('Bearer realm="qmd-nb"'), (r.status_code, r.text)
        assert r.json()['error'] == 'invalid_token'
    adm = auth(vdb.tok['admin'])
    assert c.get('/sse', headers={**adm, 'Host': 'localhost:evil.example'}).status_code == 421 # the guard's Host check
    assert c.get('/sse', headers={**adm, 'Origin': 'https://evil.example'}).status_code == 403 # and Origin
    assert c.post('/messages/?session_id=' + 'a' * 32, content=b'{' * (9 << 20), headers={**adm, 'Content-Type': 'application/json'}).status_code == 413
    assert c.post('/sse', json=ping, headers=adm).status_code == 405 and c.get('/messages/', headers=adm).status_code == 405

def test_read_token_refused_a_write_tool(vdb):
    "In its own session, a read token's call of `ingest_url` (write) is 403 with a JSON-RPC error, and never reaches the session."
    async def go(c, stack):
        tok = vdb.tok['read']
        st = await opened(c, stack, tok); await handshake(c, st, tok)
        call = rpc(7, 'tools/call', {'name': 'ingest_url', 'arguments': {'url': 'http://127.0.0.1:9/x.html', 'library': 'notes'}})
        r = await c.post(st.path, json=call, headers=auth(tok))
        assert (await c.post(st.path, json=rpc(8, 'ping'), headers=auth(tok))).status_code == 202
        return r, await st.message()
    r, nxt = with_client(vdb, go)
    assert r.status_code == 403 and r.json()['id'] == 7 and r.json()['error']['code'] == -32600, r.text
    assert 'insufficient_scope' in r.headers['www-authenticate'] and 'scope="write"' in r.headers['www-authenticate']
    assert nxt['id'] == 8 # the refused call never reached the session

def test_a_session_is_its_openers_alone(vdb):
    "Another token posting to a session's id gets 404 (as for no session), whatever its scope; the session sees none of it."
    async def go(c, stack):
        tok = vdb.tok['read']
        st = await opened(c, stack, tok); await handshake(c, st, tok)
        search = rpc(99, 'tools/call', {'name': 'search', 'arguments': {'query': 'rsync'}})
        others = {k: (await c.post(st.path, json=search, headers=auth(vdb.tok[k]))).status_code for k in ('admin', 'read-2', 'write')}
        others['none'] = (await c.post(st.path, json=search)).status_code
        assert (await c.post(st.path, json=rpc(5, 'ping'), headers=auth(tok))).status_code == 202 # its opener still can
        return others, await st.message()
    others, nxt = with_client(vdb, go)
    assert others == {'admin': 404, 'read-2': 404, 'write': 404, 'none': 401}, others
    assert nxt['id'] == 5, nxt # not 99: no other token's message reached it

def test_streams_per_token_are_capped(vdb):
    "Past `SSE_EACH` open streams a token gets 503; another token still gets in, and a closed stream frees its place."
    from qmd_nb.serve.sse import SSE_EACH
    async def go(c, stack):
        from contextlib import AsyncExitStack
        async with AsyncExitStack() as mine:
            held = [await opened(c, mine, vdb.tok['read-cap']) for _ in range(SSE_EACH)] # held: a Stream dropped closes its response
            over = await c.get('/sse', headers=auth(vdb.tok['read-cap']))
            other = await opened(c, stack, vdb.tok['read-other'])
        for _ in range(100): # the server notices the closed streams
            async with c.stream('GET', '/sse', headers=auth(vdb.tok['read-cap'])) as again:
                if again.status_code == 200: break
            await anyio.sleep(0.1)
        return over, other.path, again.status_code, len(held)
    over, other, again, _ = with_client(vdb, go)
    assert over.status_code == 503 and over.headers['retry-after'] == '5' and f'({SSE_EACH})' in over.json()['detail'], over.text
    assert other.startswith('/messages/') and again == 200

# -- stopping --------------------------------------------------------------------------------------------------------------

def test_ctrl_c_with_an_open_stream(qmd, notes):
    "`serve` (the qmd contract) answers `search` over SSE; Ctrl-C with a client's stream open: the stream ends cleanly, the server is gone at once, status 0."
    qmd('collection', 'add', notes, '--name', 'notes')
    s = Server(qmd)
    async def found(ss): return await ss.call_tool('search', {'query': 'rsync'})
    r = sdk(s, s.token, found)
    assert not r.is_error and 'notes/backup.md' in json.dumps(r.structured_content), r
    async def go(c, stack):
        st = await opened(c, stack, s.token); await handshake(c, st, s.token)
        t = time.monotonic(); s.p.send_signal(signal.SIGINT)
        with anyio.fail_after(10), pytest.raises(EOFError): await st.message() # the stream ends: no cut connection
        return t
    t = with_client(s, go)
    try: code = s.p.wait(timeout=10)
    except subprocess.TimeoutExpired: s.p.kill(); raise AssertionError("the server was still running 10 s after Ctrl-C") from None
    took, err = time.monotonic() - t, s.p.stderr.read().decode()
    s.http.close()
    assert code == 0 and took < 5 and 'Traceback' not in err and 'ERROR' not in err, (code, took, err[-3000:]) # gone at once (a stop left hanging is forced at 3.5 s, by faulthandler with status 1 at 13.5 s)
