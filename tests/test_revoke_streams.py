"""A stream ends with its token: on a real `qmd-nb serve --transport http --watch` process, over a real socket, an event
stream opened with a token (`GET /sse`, the standalone `GET /mcp` stream of Streamable HTTP) ends once the token is
revoked with `qmd-nb token revoke` or expires, and carries nothing after: the `notifications/resources/list_changed`
a saved file causes reaches another token's stream, not it. Once the token is good again, its stream places and its
session's standalone stream are free: ending a stream leaves the principal's MCP server in a good state.

No timing is asserted: deadlines are generous, the assertions are on what each stream got."""
import json, time, uuid
import anyio, httpx, pytest
from contextlib import AsyncExitStack
from conftest import Qmd, write_tree
from test_rest import Server
from test_sse import INIT, INITIALIZED, rpc, auth, opened, handshake

CHANGED = 'notifications/resources/list_changed'
ENDS_WITHIN = 15 # seconds a stream whose token failed has to end (the server checks every STREAM_RECHECK_SECONDS)
PROTOCOL = {'mcp-protocol-version': '2025-06-18'}

@pytest.fixture(scope='module')
def srv(tmp_path_factory):
    "A server watching one collection (so that a saved file sends `list_changed` to every MCP client)."
    root = tmp_path_factory.mktemp('revoke')
    qmd = Qmd(root/'home')
    qmd.env['QMD_NB_EMBED_MODEL'] = 'hash' # the test is about streams, not the model
    notes = write_tree(root/'notes', {'a.md': '# Alpha\n\nfirst note about llamas\n'})
    qmd('collection', 'add', notes, '--name', 'notes')
    s = Server(qmd, '--watch')
    s.qmd, s.notes = qmd, notes
    yield s
    code, out, err = s.stop()
    assert code == 0 and 'Traceback' not in err and 'ERROR' not in err, (code, err[-3000:])

def token(s, name:str, *args) -> str: return s.qmd('token', 'create', '--scope', 'read', '--name', name, *args).stdout.strip()

def save_a_file(s):
    "A new document in the watched collection: every MCP client of the server is told the resource list changed."
    (s.notes/f'{uuid.uuid4().hex}.md').write_text('# New\n\nquokkas in the garden\n', encoding='utf-8')

def set_expiry(s, name:str, when:float):
    "Move a token's expiry, as another process writing the token file would (`token create --expires` counts in hours)."
    from qmd_nb.engine.auth import TokenStore
    TokenStore(s.qmd.home/'config').update(lambda d: [t.update(expires=when) for t in d['tokens'] if t['name'] == name])

async def heard(st, method:str=CHANGED) -> dict:
    "The first message of `method` on an open stream (30 s at most)."
    with anyio.fail_after(30):
        while (m := await st.message()).get('method') != method: pass
    return m

async def answer(st, i:int) -> dict:
    "The answer to message `i` on an open stream (30 s at most), past any notification."
    with anyio.fail_after(30):
        while (m := await st.message()).get('id') != i: pass
    return m

async def rest_of(st) -> tuple[list, bool]:
    "Every message a stream carries until it ends (ENDS_WITHIN s at most), and whether it ended."
    got = []
    with anyio.move_on_after(ENDS_WITHIN):
        try:
            while True:
                kind, data = await st.event()
                if kind == 'message': got.append(json.loads(data))
        except EOFError: return got, True
    return got, False

async def ends_of(streams) -> list[tuple[list, bool]]:
    "`rest_of` each stream, all at once."
    out = [None] * len(streams)
    async def one(i): out[i] = await rest_of(streams[i])
    async with anyio.create_task_group() as tg:
        for i in range(len(streams)): tg.start_soon(one, i)
    return out

def with_client(s, fn):
    async def go():
        async with httpx.AsyncClient(base_url=s.url, timeout=60) as c, AsyncExitStack() as stack: return await fn(c, stack)
    return anyio.run(go)

def revoke(s, name:str): s.qmd('token', 'revoke', name) # the command line, as the owner would

# -- the SSE transport ----------------------------------------------------------------------------------------------------

def test_sse_stream_ends_when_its_token_is_revoked(srv):
    "GET /sse of a revoked token ends and gets no `list_changed`; another token's stream stays open and gets it."
    a, b = token(srv, 'sse-a'), token(srv, 'sse-b')
    async def go(c, stack):
        sa, sb = await opened(c, stack, a), await opened(c, stack, b)
        await handshake(c, sa, a); await handshake(c, sb, b)
        await anyio.to_thread.run_sync(revoke, srv, 'sse-a')
        save_a_file(srv)
        note = await heard(sb)
        after, ended = await rest_of(sa)
        posted = await c.post(sa.path, json=rpc(3, 'ping'), headers=auth(a))
        assert (await c.post(sb.path, json=rpc(4, 'ping'), headers=auth(b))).status_code == 202
        return note, after, ended, posted.status_code, (await answer(sb, 4))['id']
    note, after, ended, posted, pong = with_client(srv, go)
    assert after == [], after # nothing reached the revoked token's stream, the notification least of all
    assert ended and posted == 401
    assert note['method'] == CHANGED and pong == 4 # the other stream is open and served

# -- Streamable HTTP ------------------------------------------------------------------------------------------------------

class McpStream:
    "An initialized /mcp session of a token, and its standalone GET stream."
    def __init__(self, c, token): self.c, self.h = c, {**auth(token), 'Accept': 'application/json, text/event-stream'}
    async def start(self):
        r = await self.c.post('/mcp', json=INIT, headers=self.h)
        assert r.status_code == 200, (r.status_code, r.text)
        self.h = {**self.h, 'mcp-session-id': r.headers['mcp-session-id'], **PROTOCOL}
        assert (await self.c.post('/mcp', json=INITIALIZED, headers=self.h)).status_code == 202
        return self
    async def listen(self, stack):
        "Open the session's GET stream: a `test_sse.Stream` of it, or the refusal."
        from test_sse import Stream
        r = await stack.enter_async_context(self.c.stream('GET', '/mcp', headers={**self.h, 'Accept': 'text/event-stream'}))
        if r.status_code != 200: await r.aread(); return r
        return Stream(r)
    async def tools(self) -> httpx.Response: return await self.c.post('/mcp', json=rpc(9, 'tools/list'), headers=self.h)

def test_mcp_get_stream_ends_when_its_token_is_revoked(srv):
    "The standalone GET /mcp stream of a revoked token ends and gets no `list_changed`; another token's stream gets it."
    a, b = token(srv, 'mcp-a'), token(srv, 'mcp-b')
    async def go(c, stack):
        ma, mb = await McpStream(c, a).start(), await McpStream(c, b).start()
        sa, sb = await ma.listen(stack), await mb.listen(stack)
        await anyio.to_thread.run_sync(revoke, srv, 'mcp-a')
        save_a_file(srv)
        note = await heard(sb)
        after, ended = await rest_of(sa)
        return note, after, ended, (await ma.tools()).status_code, (await mb.tools()).status_code
    note, after, ended, a_tools, b_tools = with_client(srv, go)
    assert after == [], after
    assert ended and a_tools == 401
    assert note['method'] == CHANGED and b_tools == 200

# -- expiry, and the state a stream ended leaves ---------------------------------------------------------------------------

def test_streams_end_when_their_token_expires(srv):
    """A token's SSE streams (all it may hold) and its session's GET /mcp stream end once it expires, carrying nothing
    more; made valid again, the token opens as many SSE streams (their places were freed), its session opens a new GET
    stream (the session's one standalone stream was released) and answers."""
    from qmd_nb.serve.sse import SSE_EACH
    c_tok = token(srv, 'soon', '--expires', '1h')
    async def go(c, stack):
        async with AsyncExitStack() as held:
            streams = [await opened(c, held, c_tok) for _ in range(SSE_EACH)]
            await handshake(c, streams[0], c_tok)
            m = await McpStream(c, c_tok).start()
            get = await m.listen(held)
            set_expiry(srv, 'soon', time.time() + 2) # still valid after the file changed: it is the clock that ends it
            ends = await ends_of([get, *streams])
            expired = (await m.tools()).status_code
        set_expiry(srv, 'soon', time.time() + 3600)
        async with AsyncExitStack() as again:
            reopened = [await opened(c, again, c_tok) for _ in range(SSE_EACH)]
            await handshake(c, reopened[0], c_tok)
            new_get = await m.listen(again)
            tools = await m.tools()
        return ends, expired, len(reopened), new_get, tools
    ends, expired, reopened, new_get, tools = with_client(srv, go)
    assert all(e == ([], True) for e in ends), ends
    assert expired == 401 and reopened == SSE_EACH
    assert not isinstance(new_get, httpx.Response), (new_get.status_code, new_get.text) # 409 had the ended stream held the session's place
    assert tools.status_code == 200 and 'search' in tools.text, tools.text

# -- OAuth ----------------------------------------------------------------------------------------------------------------

def grant(s, admin:str) -> tuple[str, dict]:
    "An OAuth grant approved with `admin` (register, authorize, consent, exchange the code): (client id, the token answer)."
    import base64, hashlib, secrets
    cb = 'http://127.0.0.1:9/cb'
    with httpx.Client(base_url=s.url, timeout=60) as c:
        cid = c.post('/register', json={'client_name': 'streams', 'redirect_uris': [cb], 'token_endpoint_auth_method': 'none'}).json()['client_id']
        verifier = secrets.token_urlsafe(48)
        ch = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip('=')
        r = c.get('/authorize', params=dict(response_type='code', client_id=cid, redirect_uri=cb, state='s', code_challenge=ch, code_challenge_method='S256', scope='read'))
        r = c.post('/oauth/consent', data={'request': r.headers['location'].split('request=')[1], 'secret': admin, 'scope': 'read', 'action': 'approve'})
        code = httpx.URL(r.headers['location']).params['code']
        return cid, c.post('/token', data=dict(grant_type='authorization_code', code=code, redirect_uri=cb, client_id=cid, code_verifier=verifier)).json()

def test_oauth_streams_end_with_their_grant(srv):
    """An OAuth client's SSE stream ends when the admin token that approved its grant is revoked; another's GET /mcp
    stream ends when it revokes its grant at /revoke. Neither carries the `list_changed` a plain token's stream gets."""
    approver, b = srv.qmd('token', 'create', '--scope', 'admin', '--name', 'approver').stdout.strip(), token(srv, 'oauth-b')
    (_, one), (cid, two) = grant(srv, approver), grant(srv, srv.token)
    async def go(c, stack):
        a1, a2 = one['access_token'], two['access_token']
        s1, sb = await opened(c, stack, a1), await opened(c, stack, b)
        await handshake(c, s1, a1); await handshake(c, sb, b)
        s2 = await (await McpStream(c, a2).start()).listen(stack)
        await anyio.to_thread.run_sync(revoke, srv, 'approver')
        r = await c.post('/revoke', data={'token': a2, 'client_id': cid, 'client_secret': ''}) # a public client (the SDK wants the field)
        assert r.status_code == 200, (r.status_code, r.text)
        save_a_file(srv)
        return await heard(sb), await ends_of([s1, s2])
    note, ends = with_client(srv, go)
    assert ends == [([], True), ([], True)], ends
    assert note['method'] == CHANGED
