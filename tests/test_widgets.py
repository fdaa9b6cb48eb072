"Widgets driven from code with the real embedding model on a temporary corpus: the search widget in its three modes, and the ranking lab on an index with a judgements file."
import os
import pytest
from conftest import write_tree, NOTES

@pytest.fixture
def store(tmp_path):
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.index import add_collection, add_context
    root = write_tree(tmp_path/'notes', {k: v for k, v in NOTES.items() if k != 'bad.md'})
    st = Store(env={**os.environ, 'QMD_NB_HOME': str(tmp_path/'home')})
    add_collection(st, root, name='notes', progress=False)
    add_context(st, 'qmd://notes/journals', 'Daily journal')
    return st

def test_search_widget_keyword_while_model_loads_then_hybrid(store):
    from qmd_nb.notebook.widgets import search_ui
    from qmd_nb.engine.vectors import embed
    from qmd_nb.engine.embed import get_embedder
    embed(store, get_embedder(store.config.settings), progress=False)
    ui = search_ui(store, query='rsync') # the real model starts loading in a fresh Engine
    assert ui.results and ui.status.value.endswith('(search)') # keyword results at once
    assert '<mark>rsync</mark>' in ui.table.value
    ui.mode.value = 'query'; ui.query.value = 'how do we keep copies of important data'
    if ui.pending is not None: ui.pending.join(120) # ran in the background once the model was there
    assert ui.status.value.endswith('(query)'), ui.status.value
    assert ui.results[0].file == 'notes/backup.md'
    assert '>8</span>' in ui.doc.value # line numbers in the document view
    ui.mode.value = 'vsearch'; assert ui.results[0].file == 'notes/backup.md'
    ui.collection.value = 'notes'; ui.query.value = 'meeting about the daemon migration'
    assert ui.results[0].file == 'notes/journals/2025-05-01.md'
    assert 'Daily journal' in ui.doc.value # the file's context above the document
    ui.limit.value = 0 # below the minimum: the widget clamps it
    assert ui.limit.value == 1 and len(ui.results) == 1

def test_search_widget_errors_in_place(store):
    from qmd_nb.notebook.widgets import search_ui
    ui = search_ui(store, mode='vsearch', query='copies') # no vectors yet
    assert 'embed' in ui.status.value and ui.results == [] and ui.table.value == ''
    ui.mode.value = 'search'; ui.query.value = '"unclosed phrase'
    assert 'results' in ui.status.value or 'result ' in ui.status.value
    ui.query.value = '-rsync'
    assert 'no search terms' in ui.status.value

def test_ranking_lab_on_an_index(store, tmp_path):
    from qmd_nb.notebook.lab import lab_metrics
    from qmd_nb.notebook.lab_widget import ranking_lab
    from qmd_nb.engine.vectors import embed
    from qmd_nb.engine.embed import get_embedder
    from qmd_nb.engine.hybrid import QueryParams
    from qmd_nb.engine.store import Store
    embed(store, get_embedder(store.config.settings), progress=False)
    jf = tmp_path/'judged.tsv'
    jf.write_text('how do we copy files every night\tnotes/backup.md\nboiling pasta\tnotes/cooking/pasta.md\n'
                  'rsync daemon meeting\tnotes/journals/2025-05-01.md\t2\n', encoding='utf-8')
    lab = ranking_lab(store, jf, progress=False)
    assert lab.result.queries == 3 and lab.result.ndcg10 > 0.5
    lab.controls['fusion'].value = 'rrf'; lab.controls['rrf_k'].value = 10.0
    assert lab.result.per_query == lab_metrics(lab.cache, QueryParams().updated(fusion='rrf', rrf_k=10.0), exact=True).per_query
    lab.controls['depth'].value = 20 # not cached: retrieval runs again, once
    assert any(k[:6] == ('lists', 20, 10, 10, 5, 0.5) for k in lab.cache.seconds) # the key goes on with the keyword parameters
    assert lab.apply() == {'depth': 20, 'fusion': 'rrf', 'rrf_k': 10.0}
    assert QueryParams.from_settings(Store(env=store_env(store)).config.settings) == lab.params

def store_env(store): return {'QMD_NB_HOME': str(store.paths.cache.parent.parent)}
