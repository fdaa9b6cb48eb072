"The embedding reranker with a model of its own: all-mpnet-base-v2, joined from its PyPI part packages, reads the windows."
import pytest
from conftest import DATA, write_tree

pytest.importorskip('openvino')
MPNET = 'all-mpnet-base-v2'
PAGES = ('tar', 'unzip', 'gzip', 'du', 'df', 'find', 'hostname', 'uname', 'whoami', 'kill', 'pkill', 'sleep', 'echo')

@pytest.fixture(scope='module')
def mpnet_folder():
    "The packaged model, unpacked into the tests' shared model cache (once per machine)."
    import os
    from qmd_nb.engine.model import packaged_model
    return packaged_model(MPNET, os.environ['QMD_NB_MODEL_CACHE'])

def _tldr(tmp_path):
    return write_tree(tmp_path/'pages', {f'{p}.md': (DATA/'tldr-pages'/'common'/f'{p}.md').read_text(encoding='utf-8') for p in PAGES})

def _windows(home):
    "(fingerprint, dim) of the stored window vectors."
    from qmd_nb.engine.store import Store
    return set(Store(env={'QMD_NB_HOME': str(home)}).q("SELECT fingerprint, dim FROM windows"))

def test_packaged_model_is_a_sentence_transformers_folder(mpnet_folder):
    from qmd_nb.engine.model import st_dim, model_id
    assert (mpnet_folder/'model.safetensors').stat().st_size > 400e6
    assert st_dim(mpnet_folder) == 768 and model_id(mpnet_folder).startswith(MPNET + '@')

def test_query_reranks_with_mpnet_windows(qmd, tmp_path, mpnet_folder):
    qmd('collection', 'add', _tldr(tmp_path), '--name', 'tldr'); qmd('embed')
    q = ['query', 'print the name of this computer', '--json', '--explain', '-n', '5', '--set', 'rerank_title=true']
    base = qmd.json(*q)
    own = qmd.json(*q, '--set', f'rerank_embedder={MPNET}')
    dims = {d for fp, d in _windows(qmd.home) if fp.startswith(MPNET)}
    assert dims == {768}, _windows(qmd.home) # the windows were read by mpnet, under its own fingerprint
    assert {d for fp, d in _windows(qmd.home) if fp.startswith('all-MiniLM')} == {384} # the index model's stay apart
    rr = lambda hits: {h['file']: h['explain']['rerank'] for h in hits if h['explain'].get('rerank') is not None}
    assert len(rr(own)) == 5
    # each score is mpnet's cosine between the question and the page's best title-prefixed sentence (sentence-transformers, fp32)
    from sentence_transformers import SentenceTransformer
    from qmd_nb.engine.rerank import windows
    st = SentenceTransformer(str(mpnet_folder), device='cpu', local_files_only=True)
    qv = st.encode(q[1], normalize_embeddings=True)
    for f, score in rr(own).items():
        page = f.split('/')[-1][:-3]
        ref = float((st.encode(windows((tmp_path/'pages'/f'{page}.md').read_text(encoding='utf-8'), page, 1, 4), normalize_embeddings=True) @ qv).max())
        assert abs(score - ref) < 0.05, (f, score, ref) # int8 against fp32 (measured: within 0.04)
    assert max(abs(rr(own)[f] - rr(base)[f]) for f in set(rr(own)) & set(rr(base))) > 0.05 # not the index model's scores

def test_bad_rerank_embedder_names_the_problem(qmd, tmp_path):
    qmd('collection', 'add', write_tree(tmp_path/'n', {'a.md': '# A\n\nalpha beta gamma\n', 'b.md': '# B\n\nbeta delta\n'}), '--name', 'n'); qmd('embed')
    r = qmd('query', 'alpha beta', '--set', 'rerank_embedder=/no/such/model', ok=False)
    assert r.returncode == 1 and "rerank_embedder '/no/such/model' is neither a local sentence-transformers folder nor a packaged model" in r.stderr, r.stderr

def test_shortlist_reads_only_the_index_models_best_windows(qmd, tmp_path, mpnet_folder):
    "With rerank_shortlist, mpnet reads each page's best three MiniLM windows: no mpnet windows are stored, and no score beats reading them all."
    qmd('collection', 'add', _tldr(tmp_path), '--name', 'tldr'); qmd('embed')
    q = ['query', 'print the name of this computer', '--json', '--explain', '-n', '5', '--set', f'rerank_embedder={MPNET}']
    rr = lambda hits: {h['file']: h['explain']['rerank'] for h in hits if h['explain'].get('rerank') is not None}
    short = rr(qmd.json(*q, '--set', 'rerank_shortlist=3'))
    assert len(short) == 5 and not {fp for fp, _ in _windows(qmd.home) if fp.startswith(MPNET)}, _windows(qmd.home)
    full = rr(qmd.json(*q))
    assert {fp for fp, _ in _windows(qmd.home) if fp.startswith(MPNET)} # reading every window stores them
    both = set(short) & set(full)
    assert both and all(short[f] <= full[f] + 1e-3 for f in both), (short, full) # the best of three windows, never more than the best of all
