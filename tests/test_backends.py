"The pluggable pieces exercised for real: a locally built CrossEncoder, OpenAI-compatible endpoints served on loopback, and a Chroma server."
import json, socket, subprocess, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
import numpy as np
import pytest

from qmd_nb.engine.store import Store
from qmd_nb.engine.index import add_collection
from qmd_nb.engine.embed import HashEmbedder
from qmd_nb.engine.vectors import embed
from qmd_nb.engine.hybrid import hybrid_query, QueryParams
from qmd_nb.engine.errors import QmdError

@pytest.fixture
def store(tmp_path, notes):
    st = Store(env={'QMD_NB_HOME': str(tmp_path/'home')})
    add_collection(st, notes, name='notes', progress=False)
    embed(st, HashEmbedder(), progress=False)
    return st

class _Fake(BaseHTTPRequestHandler):
    "An OpenAI-compatible chat and rerank endpoint with predictable answers."
    seen = []
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        _Fake.seen.append((self.path, body, self.headers.get('Authorization')))
        if self.path == '/v1/chat/completions':
            out = {'choices': [{'message': {'content': 'lex: rsync nightly NAS\nvec: keeping copies of files safe\nhyde: We back up to the NAS every night.\nnoise line'}}]}
        elif self.path == '/v1/rerank':
            q = set(body['query'].lower().split())
            out = {'results': [{'index': i, 'relevance_score': len(q & set(d.lower().split())) / 10} for i, d in enumerate(body['documents'])]}
        else: self.send_response(404); self.end_headers(); return
        data = json.dumps(out).encode()
        self.send_response(200); self.send_header('Content-Type', 'application/json'); self.send_header('Content-Length', str(len(data))); self.end_headers(); self.wfile.write(data)

@pytest.fixture
def endpoint():
    srv = ThreadingHTTPServer(('127.0.0.1', 0), _Fake)
    t = threading.Thread(target=srv.serve_forever, daemon=True); t.start()
    _Fake.seen.clear()
    yield f'http://127.0.0.1:{srv.server_address[1]}/v1'
    srv.shutdown()

def test_chat_expansion(store, endpoint):
    store.config.settings.update(expand_url=endpoint, expand_api_key='sk-test')
    res = hybrid_query(store, HashEmbedder(), 'how are backups kept', params=QueryParams(expansion='chat', probe_min_score=2.0), explain=True)
    lists = set().union(*(r.explain['lists'] for r in res))
    assert {'lex:llm', 'vec:llm', 'hyde:llm'} <= lists
    path, body, auth = _Fake.seen[0]
    assert path == '/v1/chat/completions' and 'how are backups kept' in body['messages'][0]['content'] and auth == 'Bearer sk-test'
    hybrid_query(store, HashEmbedder(), 'how are backups kept', params=QueryParams(expansion='chat', probe_min_score=2.0, depth=50))
    assert len([s for s in _Fake.seen if s[0] == '/v1/chat/completions']) == 1 # the expansion is cached

def test_http_reranker(store, endpoint):
    store.config.settings.update(rerank_url=endpoint)
    res = hybrid_query(store, HashEmbedder(), 'rsync copy files NAS', params=QueryParams(rerank='http'), explain=True)
    assert _Fake.seen[-1][0] == '/v1/rerank'
    docs = _Fake.seen[-1][1]['documents']
    assert all(r.explain['rerank'] is not None for r in res[:len(docs)])
    assert max(r.explain['rerank'] for r in res) > 0

def test_endpoint_down_is_a_clear_error(store):
    store.config.settings.update(rerank_url='http://127.0.0.1:9/v1')
    with pytest.raises(QmdError, match=r'http://127.0.0.1:9/v1/rerank is unreachable'):
        hybrid_query(store, HashEmbedder(), 'rsync', params=QueryParams(rerank='http'))

def test_local_cross_encoder(store, tmp_path, monkeypatch):
    from sentence_transformers import CrossEncoder
    from qmd_nb.engine.chunk import model_dir
    folder = tmp_path/'ce'
    CrossEncoder(model_dir(), num_labels=1, device='cpu').save(str(folder)) # a cross-encoder built here, from the bundled weights
    monkeypatch.setenv('QMD_NB_RERANK_MODEL', str(folder))
    res = hybrid_query(store, HashEmbedder(), 'rsync copy files NAS', params=QueryParams(rerank='cross-encoder'), explain=True)
    from qmd_nb.engine.rerank import candidates
    from qmd_nb.engine.documents import find_doc
    c = candidates(store, [find_doc(store, res[0].file)])[0]
    expected = float(np.ravel(CrossEncoder(str(folder), device='cpu').predict([('rsync copy files NAS', f'{c.title}\n{c.text}'[:2000])]))[0])
    assert abs(res[0].explain['rerank'] - expected) < 1e-3 # the pipeline's rerank score is the cross-encoder's

def _free_port():
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def test_chroma_server(qmd, notes, tmp_path):
    chroma = Path(sys.executable).parent/'chroma'
    port = _free_port()
    srv = subprocess.Popen([str(chroma), 'run', '--path', str(tmp_path/'chroma-server'), '--host', '127.0.0.1', '--port', str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try: socket.create_connection(('127.0.0.1', port), 0.2).close(); break
            except OSError: time.sleep(0.1)
        qmd.env['QMD_NB_CHROMA_URL'] = f'http://127.0.0.1:{port}'
        qmd('collection', 'add', notes, '--name', 'notes')
        assert qmd('embed').stdout.startswith('Embedded 8 documents')
        assert not (qmd.home/'cache'/'index'/'vectors').exists() # the vectors went to the server
        v = qmd.json('vsearch', 'how do I keep copies of my data safe', '--format', 'json')
        assert v[0]['file'] == 'notes/backup.md'
        assert qmd.json('vsearch', 'coffee', '-c', 'notes', '--min-score', '0.1', '--format', 'json')[0]['file'] == 'notes/cooking/café.md'
        assert qmd.json('query', 'nightly rsync backup', '--format', 'json')[0]['file'] == 'notes/backup.md'
    finally:
        srv.terminate(); srv.wait(10)
