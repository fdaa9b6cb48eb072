"""Query expansion by the local LLM (`expansion=llm`, `qmd_nb.engine.llm`): the real Qwen2.5-Coder-1.5B GGUF from its
PyPI packages, run by llama.cpp, through the command line and the MCP server over stdio, on real tldr pages."""
import asyncio, importlib.util, json, shutil
from pathlib import Path
import pytest
from conftest import DATA, QMD_BIN

if importlib.util.find_spec('llama_cpp') is None: pytest.skip("needs llama-cpp-python (pip install 'qmd-nb[llm]')", allow_module_level=True)

PAGES = ['common/tee.md', 'common/screen.md', 'common/cat.md', 'common/echo.md', 'common/tail.md', 'common/ps.md', 'windows/tasklist.md',
         'common/printf.md', 'common/less.md', 'linux/script.md', 'linux/pstree.md', 'linux/top.md']
QUESTION = 'write output to a file and the screen at the same time'

@pytest.fixture
def pages(qmd, tmp_path):
    "A dozen tldr pages (tee among them, none holding the question's words together), indexed and embedded."
    if not (DATA/'tldr-pages').is_dir(): pytest.skip('needs ../shared/data/tldr-pages')
    for rel in PAGES: (tmp_path/'pages'/rel).parent.mkdir(parents=True, exist_ok=True); shutil.copy(DATA/'tldr-pages'/rel, tmp_path/'pages'/rel)
    qmd('collection', 'add', tmp_path/'pages', '--name', 'tldr'); qmd('embed')
    return qmd

def test_the_answer_finds_the_page_the_question_means(pages):
    "The model's answer names `tee`: its lists put tee.md first, and --explain shows them."
    top = lambda *extra: json.loads(pages('query', QUESTION, '-n', '3', '--json', *extra).stdout)[0]['file']
    assert top('--set', 'expansion=llm') == 'tldr/common/tee.md'
    shown = pages('query', QUESTION, '-n', '1', '--set', 'expansion=llm', '--explain').stdout
    assert 'lex:answer #1' in shown and 'hyde:answer' in shown, shown
    assert top() != 'tldr/common/tee.md' # (without it, the question's own words pick another page: what the expansion is for)

def test_an_answer_that_names_no_page_here_is_left_out(pages):
    "The model answers `git init`, and no page here is git's: query ranks as without expansion, unless answer_grounding=false keeps the answer."
    q = 'start a new git repository'
    ranked = lambda *extra: [r['file'] for r in json.loads(pages('query', q, '-n', '5', '--json', *extra).stdout)]
    assert ranked('--set', 'expansion=llm') == ranked()
    assert 'lex:answer' not in pages('query', q, '-n', '1', '--set', 'expansion=llm', '--explain').stdout
    kept = pages('query', q, '-n', '1', '--set', 'expansion=llm', '--set', 'answer_grounding=false', '--explain').stdout
    assert 'lex:answer' in kept and 'lex:names' in kept, kept

def test_the_index_setting_turns_it_on_for_the_mcp_server(pages):
    "`query` settings in the index config: the MCP server's query tool expands too, and stdout carries only protocol messages (the SDK's client reads every line of it)."
    cfg = pages.home/'config'/'index.json'
    c = json.loads(cfg.read_text(encoding='utf-8')); c.setdefault('settings', {})['query'] = {'expansion': 'llm'}; cfg.write_text(json.dumps(c), encoding='utf-8')
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    async def go():
        async with Client(StdioServerParameters(command=QMD_BIN, args=['mcp'], env=pages.env)) as cl:
            return await cl.call_tool('query', {'query': QUESTION, 'limit': 3})
    res = asyncio.run(go())
    assert not res.is_error and res.structured_content['results'][0]['file'] == 'tldr/common/tee.md', res.content[0].text[:500]

def test_a_model_that_is_not_there_is_named(pages, tmp_path):
    "A wrong `llm_model` (or QMD_NB_LLM_MODEL) is a clear error, not a search without expansion."
    pages.env['QMD_NB_LLM_MODEL'] = str(tmp_path/'missing.gguf')
    out = pages('query', QUESTION, '--set', 'expansion=llm', ok=False)
    assert out.returncode == 1 and 'missing.gguf' in out.stderr and 'neither a packaged model' in out.stderr and 'Traceback' not in out.stderr, out.stderr
    bad = pages('query', QUESTION, '--set', 'expansion=llms', ok=False)
    assert bad.returncode == 1 and 'expansion must be prf, llm, chat or none' in bad.stderr, bad.stderr
