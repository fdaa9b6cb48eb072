"""OAuth for MCP's older SSE transport, on a real `qmd-nb serve --transport http` process over a real socket: the MCP
SDK's own OAuth client (`mcp.client.auth.OAuthClientProvider`, an in-memory token storage, a "browser" that approves on
the consent page with an admin token) connects with the SDK's own SSE client to `/sse` and does the whole flow itself
(401, RFC 9728 metadata, RFC 8414 metadata, registration, authorize with PKCE and `resource`, consent, token), as it
does at `/mcp`. The SDK checks that the protected resource named by the metadata is the URL it connects to (RFC 8707,
RFC 9728 §3.3): /sse has its own metadata (`/.well-known/oauth-protected-resource/sse`, resource = the /sse URL), and
/mcp and /sse are one resource server: a token granted for either works on both. A resource that is not one of the
server's own is refused. No timing is asserted."""
import json
import anyio, httpx, pytest
from conftest import Qmd, NOTES, write_tree
from test_rest import Server
from test_sse import auth, opened, handshake, with_client, rpc

CB = 'http://127.0.0.1:9/cb' # the client's redirect URI: the "browser" below reads the code off the redirect, nothing listens there

@pytest.fixture(scope='module')
def srv(tmp_path_factory):
    "A server (the qmd tools) over the notes, with an admin token to approve grants."
    root = tmp_path_factory.mktemp('sse-oauth')
    qmd = Qmd(root/'home')
    qmd.env['QMD_NB_EMBED_MODEL'] = 'hash' # `search` is the keyword search: no model needed
    qmd('collection', 'add', write_tree(root/'notes', NOTES), '--name', 'notes')
    s = Server(qmd)
    s.qmd, s.admin = qmd, qmd('token', 'create', '--scope', 'admin', '--name', 'approver').stdout.strip()
    yield s
    code, out, err = s.stop()
    assert code == 0 and 'Traceback' not in err and 'ERROR' not in err, (code, err[-3000:])

# -- the SDK's own OAuth client ---------------------------------------------------------------------------------------

class Memory:
    "The SDK's `TokenStorage`, in memory."
    def __init__(self): self.tokens = self.client = None
    async def get_tokens(self): return self.tokens
    async def set_tokens(self, tokens): self.tokens = tokens
    async def get_client_info(self): return self.client
    async def set_client_info(self, info): self.client = info

class Browser:
    "Plays the user's browser: opens the authorization URL, approves on the consent page with an admin token, and gives the client the code the redirect carries."
    def __init__(self, admin:str): self.admin, self.urls, self.result = admin, [], None
    async def redirect(self, url:str):
        from mcp.client.auth import AuthorizationCodeResult
        self.urls.append(url)
        async with httpx.AsyncClient(timeout=30) as h:
            r = await h.get(url)
            assert r.status_code == 302 and '/oauth/consent?request=' in r.headers['location'], (r.status_code, r.headers.get('location'), r.text)
            r = await h.post(url.split('/authorize')[0] + '/oauth/consent', data={'request': r.headers['location'].split('request=')[1], 'secret': self.admin,
                                                                                     'scope': 'read', 'action': 'approve'})
        assert r.status_code == 303 and r.headers['location'].startswith(CB + '?'), (r.status_code, r.text)
        q = httpx.URL(r.headers['location']).params
        self.result = AuthorizationCodeResult(code=q['code'], state=q.get('state'), iss=q.get('iss'))
    async def callback(self): return self.result

def provider(server_url:str, admin:str):
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata
    meta = OAuthClientMetadata(client_name='sse-oauth-test', redirect_uris=[CB], grant_types=['authorization_code', 'refresh_token'],
                               response_types=['code'], token_endpoint_auth_method='none')
    b = Browser(admin)
    return OAuthClientProvider(server_url, meta, Memory(), b.redirect, b.callback), b

async def _tools_and_search(s) -> tuple[list[str], object]:
    await s.initialize()
    return [t.name for t in (await s.list_tools()).tools], await s.call_tool('search', {'query': 'rsync'})

async def over_sse(url:str, admin:str):
    "Connect to /sse with the SDK's SSE client and OAuth provider, list the tools, call `search`."
    from mcp import ClientSession
    from mcp.client.sse import sse_client
    p, b = provider(url + '/sse', admin)
    async with sse_client(url + '/sse', auth=p, timeout=30) as (r, w), ClientSession(r, w) as s: return (*await _tools_and_search(s), p, b)

async def over_mcp(url:str, admin:str):
    "The same at /mcp (Streamable HTTP)."
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    p, b = provider(url + '/mcp', admin)
    async with httpx2.AsyncClient(auth=p, timeout=30) as h, streamable_http_client(url + '/mcp', http_client=h) as (r, w), ClientSession(r, w) as s:
        return (*await _tools_and_search(s), p, b)

def check_found(names, found):
    assert {'search', 'get', 'status'} <= set(names) and not {'vsearch', 'query'} - set(names), names
    assert not found.is_error and 'notes/backup.md' in json.dumps(found.structured_content), found

def test_sdk_oauth_client_over_sse(srv):
    "The SDK's OAuth provider with its SSE client: discovery, registration, consent and tokens, then `tools/list` and `search` over /sse."
    names, found, p, b = anyio.run(over_sse, srv.url, srv.admin)
    check_found(names, found)
    assert len(b.urls) == 1 and httpx.URL(b.urls[0]).params['resource'] == srv.url + '/sse', b.urls # it asked for /sse, and was granted it
    assert str(p.context.protected_resource_metadata.resource) == srv.url + '/sse'
    tok = p.context.current_tokens.access_token
    assert httpx.post(srv.url + '/search', json={'query': 'rsync'}, headers=auth(tok)).status_code == 200 # an OAuth token of this server

def test_sdk_oauth_client_over_mcp_unchanged(srv):
    "At /mcp the same flow names /mcp as before."
    names, found, p, b = anyio.run(over_mcp, srv.url, srv.admin)
    check_found(names, found)
    assert httpx.URL(b.urls[0]).params['resource'] == srv.url + '/mcp' and str(p.context.protected_resource_metadata.resource) == srv.url + '/mcp'

# -- the discovery steps, by hand ---------------------------------------------------------------------------------------

def metadata_url(r:httpx.Response) -> str:
    from mcp.client.auth.utils import extract_resource_metadata_from_www_auth
    return extract_resource_metadata_from_www_auth(r)

def test_challenges_and_metadata_name_each_endpoint(srv):
    "A 401 at /sse or /messages/ names /sse's metadata, whose resource is the /sse URL; /mcp's 401 and metadata are as before."
    c, wk = httpx.Client(base_url=srv.url, timeout=30), srv.url + '/.well-known/oauth-protected-resource'
    for path, method, want in (('/sse', 'GET', '/sse'), ('/messages/?session_id=' + 'a' * 32, 'POST', '/sse'), ('/mcp', 'POST', '/mcp')):
        r = c.request(method, path, json=rpc(1, 'ping'))
        assert r.status_code == 401 and metadata_url(r) == wk + want, (path, r.status_code, r.headers.get('www-authenticate'))
        m = c.get(metadata_url(r)).json()
        assert m['resource'] == srv.url + want and m['authorization_servers'] == [srv.url] and m['scopes_supported'] == ['read', 'write', 'admin'], m
    assert c.get(wk).json()['resource'] == srv.url + '/mcp' # the root metadata still names /mcp
    assert c.get(wk + '/messages').status_code == 404 and c.get(wk + '/other').status_code == 404

def _authorize(c:httpx.Client, cid:str, resource:str|None, challenge:str) -> httpx.Response:
    return c.get('/authorize', params=dict(response_type='code', client_id=cid, redirect_uri=CB, state='s', code_challenge=challenge,
                                           code_challenge_method='S256', scope='read', **({'resource': resource} if resource else {})))

def code_form(c:httpx.Client, srv, resource:str|None) -> tuple[str, dict]:
    "(the token endpoint, the form that trades a new code for tokens) of a grant for `resource`: register, authorize with PKCE, consent with the admin token."
    import base64, hashlib, secrets
    asm = c.get('/.well-known/oauth-authorization-server').json()
    cid = c.post(asm['registration_endpoint'], json={'client_name': 'by-hand', 'redirect_uris': [CB], 'token_endpoint_auth_method': 'none'}).json()['client_id']
    verifier = secrets.token_urlsafe(48)
    r = _authorize(c, cid, resource, base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip('='))
    assert r.status_code == 302 and '/oauth/consent?request=' in r.headers['location'], (r.status_code, r.headers.get('location'))
    r = c.post('/oauth/consent', data={'request': r.headers['location'].split('request=')[1], 'secret': srv.admin, 'scope': 'read', 'action': 'approve'})
    return asm['token_endpoint'], dict(grant_type='authorization_code', code=httpx.URL(r.headers['location']).params['code'], redirect_uri=CB, client_id=cid, code_verifier=verifier)

def grant(srv, resource:str|None) -> dict:
    "The token answer of a grant for `resource` (the code traded naming it too)."
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        url, form = code_form(c, srv, resource)
        r = c.post(url, data=form | ({'resource': resource} if resource else {}))
        assert r.status_code == 200, r.text
        return r.json()

def test_a_token_for_either_resource_works_on_both(srv):
    "A grant for /sse, for /mcp (or naming none): its token opens an SSE session and calls a tool at /mcp alike."
    async def use(c, stack, tok):
        st = await opened(c, stack, tok); await handshake(c, st, tok)
        assert (await c.post(st.path, json=rpc(3, 'tools/call', {'name': 'search', 'arguments': {'query': 'rsync'}}), headers=auth(tok))).status_code == 202
        sse = await st.message()
        h = {**auth(tok), 'Accept': 'application/json, text/event-stream'}
        init = await c.post('/mcp', json=rpc(0, 'initialize', {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 't', 'version': '1'}}), headers=h)
        return sse, init.status_code
    for resource in (srv.url + '/sse', srv.url + '/mcp', srv.url + '/sse/', None):
        tok = grant(srv, resource)['access_token']
        sse, init = with_client(srv, lambda c, stack: use(c, stack, tok))
        assert sse['id'] == 3 and 'notes/backup.md' in json.dumps(sse['result']) and init == 200, (resource, sse, init)

def test_resources_not_ours_are_refused(srv):
    "authorize names a resource that is not this server's /mcp or /sse: `invalid_target`, back to the client's own registered redirect URI, no consent asked."
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        cid = c.post('/register', json={'client_name': 'foreign', 'redirect_uris': [CB], 'token_endpoint_auth_method': 'none'}).json()['client_id']
        port = srv.url.rsplit(':', 1)[1]
        for res in ('https://evil.example/sse', 'http://evil.example:' + port + '/sse', srv.url + '/messages/', srv.url + '/sse/x', srv.url + '/ssex',
                    srv.url + '/', srv.url + '/search', 'http://localhost:' + port + '/sse', srv.url.replace('http:', 'https:') + '/sse'):
            r = _authorize(c, cid, res, 'A' * 43)
            assert r.status_code == 302, (res, r.status_code, r.text)
            loc = httpx.URL(r.headers['location'])
            assert str(loc).startswith(CB + '?') and loc.params['error'] == 'invalid_target' and loc.params['state'] == 's', (res, str(loc))
        r = c.get('/authorize', params=dict(response_type='code', client_id=cid, redirect_uri='https://evil.example/cb', state='s', code_challenge='A' * 43,
                                            code_challenge_method='S256', scope='read', resource=srv.url + '/sse'))
        assert r.status_code == 400 and 'evil.example' not in r.headers.get('location', ''), (r.status_code, r.headers) # no open redirect

def test_token_endpoint_refuses_resources_not_ours(srv):
    "The code exchange or a refresh naming a resource that is not this server's: `invalid_target` (RFC 8707 §2.2); the code is not spent, and still works here."
    port = srv.url.rsplit(':', 1)[1]
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        url, form = code_form(c, srv, None)
        for res in ('https://evil.example/mcp', 'http://evil.example:' + port + '/mcp', srv.url + '/messages/', srv.url + '/', 'http://localhost:' + port + '/mcp'):
            r = c.post(url, data=form | {'resource': res})
            assert (r.status_code, r.json()['error'], r.headers['cache-control']) == (400, 'invalid_target', 'no-store'), (res, r.status_code, r.text)
        tok = c.post(url, data=form | {'resource': srv.url + '/sse'}).json()
        r = c.post(url, data=dict(grant_type='refresh_token', refresh_token=tok['refresh_token'], client_id=form['client_id'], resource='https://evil.example/mcp'))
        assert r.status_code == 400 and r.json()['error'] == 'invalid_target', r.text
        r = c.post(url, data=dict(grant_type='refresh_token', refresh_token=tok['refresh_token'], client_id=form['client_id'], resource=srv.url + '/mcp'))
        assert r.status_code == 200 and r.json()['access_token'] != tok['access_token'], r.text
        assert c.post('/mcp', json=rpc(1, 'ping'), headers={**auth(r.json()['access_token']), 'Accept': 'application/json, text/event-stream'}).status_code != 401
