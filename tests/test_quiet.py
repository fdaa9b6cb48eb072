"""On success, the commands people run most print nothing on stderr but progress and their summary: no library
warnings (transformers' `loss_type`), no debug lines (bm25s' `Building index`), no empty-index hints where there are
collections. Subprocesses have no terminal, so there are no progress bars here: stderr must be empty, except the
HTTP server's start-up lines saying where it listens and how clients get in."""
import json, re, subprocess, time, urllib.request
from conftest import QMD_BIN
from test_readme import free_port, wait_for, _get

# the first use on a machine converts the model once, with progress (ours, transformers', NNCF's): allowed, nothing else
PROGRESS = re.compile(r'^(qmd-nb: preparing the embedding model|Loading weights|Statistics collection|Applying )')
def noise(err:str) -> list[str]: return [l for l in err.splitlines() if l.strip() and not PROGRESS.match(l)]

def test_search_embed_and_mcp_say_nothing_on_stderr(qmd, notes):
    (notes/'bad.md').unlink() # a file that cannot be indexed is reported on stderr, rightly: not what this test is about
    qmd('collection', 'add', notes, '--name', 'notes')
    for args in (['search', 'rsync'], ['embed'], ['vsearch', 'keep copies safe'], ['query', 'keep copies safe'], ['status'], ['update']):
        r = qmd(*args)
        assert r.stdout and noise(r.stderr) == [], (args, r.stderr)
    init = {'jsonrpc': '2.0', 'id': 1, 'method': 'initialize', 'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 't', 'version': '0'}}}
    calls = [init, {'jsonrpc': '2.0', 'method': 'notifications/initialized'}] + [
        {'jsonrpc': '2.0', 'id': i, 'method': 'tools/call', 'params': {'name': n, 'arguments': {'query': 'backup copies'}}}
        for i, n in ((2, 'search'), (3, 'vsearch'), (4, 'query'))]
    p = subprocess.Popen([QMD_BIN, 'mcp'], env=qmd.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8')
    for m in calls: p.stdin.write(json.dumps(m) + '\n'); p.stdin.flush()
    answers = [json.loads(p.stdout.readline()) for _ in range(4)]
    time.sleep(3) # the model's background load and the reranker's warm-up start two seconds after the handshake
    out, err = p.communicate(timeout=120) # closes stdin: the server ends at end of input
    assert p.returncode == 0 and all('result' in a and not a['result'].get('isError') for a in answers), answers
    assert noise(err) == [], err

def test_http_server_says_where_it_listens_and_nothing_else(qmd, notes):
    (notes/'bad.md').unlink()
    qmd('collection', 'add', notes, '--name', 'notes')
    port = free_port()
    p = subprocess.Popen([QMD_BIN, 'serve', '--port', str(port)], env=qmd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8')
    try:
        wait_for(lambda: _get(f'http://127.0.0.1:{port}/health'), 120, 'the server')
        (notes/'new.md').write_text('# New\n\nA fresh note about tapes.\n', encoding='utf-8')
        auth = {'Authorization': f"Bearer {(qmd.home/'config'/'token').read_text(encoding='utf-8').strip()}"} # made by the server on first use
        call = lambda path, body=None: json.loads(urllib.request.urlopen(urllib.request.Request(f'http://127.0.0.1:{port}{path}', data=body,
                                                  headers={'Content-Type': 'application/json', **auth}), timeout=120).read())
        assert call('/update', b'{}')['status'] == 'updated' # rebuilds the keyword index in the server
        assert call('/status')['total_documents'] == 9
    finally:
        p.terminate(); _, err = p.communicate(timeout=60)
    lines = err.splitlines() # what the server says when it starts (where it listens, how clients get in), and nothing after
    assert p.returncode == 0 and lines[0] == f'qmd-nb: REST on http://127.0.0.1:{port}, MCP (Streamable HTTP) on http://127.0.0.1:{port}/mcp', err
    assert all(l.startswith('qmd-nb: ') and not re.search(r'DEBUG|WARNING|ERROR|Traceback|loss_type', l) for l in lines), err

def test_mcp_in_a_terminal_says_what_it_waits_for(qmd, notes):
    "Typed by a person, `qmd-nb mcp` says on stderr that it waits for an MCP client (piped, above, it says nothing); Ctrl-D ends it."
    import os, pty
    qmd('collection', 'add', notes, '--name', 'notes')
    main, tty = pty.openpty()
    p = subprocess.Popen([QMD_BIN, 'mcp'], env=qmd.env, stdin=tty, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding='utf-8')
    os.close(tty)
    os.write(main, b'\x04') # Ctrl-D: end of input on a terminal (read once the server reads)
    try: out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None: p.kill()
        os.close(main)
    line, *rest = err.splitlines() or ['']
    assert line.startswith("qmd-nb: MCP server on stdio, waiting for an MCP client") and 'mcp-config' in line, line
    assert p.returncode == 0 and out == '' and noise('\n'.join(rest)) == [], (p.returncode, out, err)
