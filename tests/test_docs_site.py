"""The documentation: site configuration complete, the own-docs evaluation set consistent, and the tutorials rendered
to HTML (without Quarto: tools/render_docs.py executes them with their widgets' state) and opened in headless
Chromium, offline: no script errors, no request leaving the local server, the tutorials' results on the page.

Chromium is Debian's (`tools/setup.sh` installs it with apt-get), driven by playwright with `executable_path`;
the widget JavaScript comes from the cache `tools/widget_js.sh` fills. A screenshot of each page is kept under
build/artifacts/ (the paths are printed). QMD_NB_NO_BROWSER=1 skips the browser tests.
"""
import functools, gzip, http.server, json, os, re, shutil, subprocess, sys, threading
from pathlib import Path
import pytest, yaml

ROOT = Path(__file__).resolve().parents[1]
NBS, ART, EVAL = ROOT/'nbs', ROOT/'build'/'artifacts', ROOT/'examples'/'own-docs-eval'
TUTORIALS = [p for p in ('index.ipynb', 'tutorials/ranking.ipynb') if (NBS/p).exists()]

def run(*args, timeout=120):
    r = subprocess.run([sys.executable, *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=timeout, encoding='utf-8')
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout

# ---- configuration

def test_sidebar_lists_every_notebook():
    run(ROOT/'tools'/'render_docs.py', '--check-sidebar')
    listed = yaml.safe_load((NBS/'sidebar.yml').read_text(encoding='utf-8'))['website']['sidebar']['contents']
    flat = [x for c in listed for x in ([c] if isinstance(c, str) else c['contents'])]
    assert flat[0] == 'index.ipynb' and all((NBS/p).exists() for p in flat)
    assert 'tutorials/ranking.ipynb' in flat or not (NBS/'tutorials'/'ranking.ipynb').exists()

def test_every_page_opens_with_a_title_and_a_one_line_subtitle():
    "Each notebook starts `# Title` then one `> summary` line of at most 100 characters (the page's subtitle, the module's docstring)."
    bad = []
    for nb in sorted(p for p in NBS.rglob('*.ipynb') if not any(x.startswith(('_', '.')) for x in p.relative_to(NBS).parts)):
        lines = ''.join(json.loads(nb.read_text(encoding='utf-8'))['cells'][0]['source']).split('\n')
        subs = [l for l in lines if l.startswith('>')]
        if not lines[0].startswith('# ') or len(subs) != 1 or len(subs[0]) > 100: bad.append((str(nb.relative_to(NBS)), subs))
    assert bad == []

def test_quarto_configuration():
    q = yaml.safe_load((NBS/'_quarto.yml').read_text(encoding='utf-8'))
    assert q['project']['type'] == 'website'
    for f in q['metadata-files'] + [q['format']['html']['css']]: assert (NBS/f).exists(), f
    for item in q['website']['navbar']['left']: assert (NBS/item['href']).exists(), item['href']
    from nbdev.config import get_config
    cfg, site = get_config(), yaml.safe_load((NBS/'nbdev.yml').read_text(encoding='utf-8'))
    assert site['website']['title'] == cfg.title and site['website']['repo-url'] == cfg.git_url
    assert site['project']['output-dir'] == cfg.doc_path.name

def test_readme_is_the_index_notebook():
    run(ROOT/'tools'/'readme.py', '--check')
    readme = (ROOT/'README.md').read_text(encoding='utf-8')
    for cmd in ('bash tools/demo.sh', 'bash tools/test.sh'): assert cmd in readme # the two commands stay

# ---- the evaluation set

def test_own_docs_eval_set():
    run(EVAL/'build_corpus.py', '--check')
    assert not (EVAL/'corpus.jsonl').exists() # stored compressed: corpus.jsonl.gz, which `qmd-nb eval` reads as it is
    ids = {json.loads(l)['_id'] for l in gzip.decompress((EVAL/'corpus.jsonl.gz').read_bytes()).decode('utf-8').splitlines()}
    queries = {json.loads(l)['_id'] for l in (EVAL/'queries.jsonl').read_text(encoding='utf-8').splitlines()}
    qrels = [l.split('\t') for l in (EVAL/'qrels.tsv').read_text(encoding='utf-8').splitlines()[1:]]
    assert 30 <= len(queries) <= 60 and {q for q, _, _ in qrels} == queries
    assert {d for _, d, _ in qrels} <= ids
    assert (EVAL/'corpus.jsonl.gz').stat().st_size < 1_000_000

# ---- rendered pages in a browser

@pytest.fixture(scope='module')
def site():
    out = ROOT/'build'/'docs-test'
    if out.exists(): shutil.rmtree(out)
    run(ROOT/'tools'/'render_docs.py', '--out', out, '--only', *TUTORIALS, '--execute', *TUTORIALS, timeout=1200)
    assert (out/'_static'/'html-manager'/'embed-amd.js').exists(), "no widget JavaScript: run tools/widget_js.sh"
    return out

@pytest.fixture(scope='module')
def server(site):
    handler = functools.partial(type('Quiet', (http.server.SimpleHTTPRequestHandler,), {'log_message': lambda *a: None}),
                                directory=str(site))
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f'http://127.0.0.1:{srv.server_address[1]}'
    srv.shutdown()

@pytest.fixture(scope='module')
def browser():
    if os.environ.get('QMD_NB_NO_BROWSER'): pytest.skip('QMD_NB_NO_BROWSER is set')
    exe = shutil.which('chromium')
    assert exe, "chromium is missing: tools/setup.sh installs it (apt-get install -y chromium)"
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=['--no-sandbox'])
        yield b
        b.close()

def visit(browser, base, rel) -> tuple:
    "Open a page; return it, its errors (console errors, page errors, failed or off-site requests) and its screenshot."
    page = browser.new_page(viewport={'width': 1280, 'height': 900})
    errors = []
    page.on('console', lambda m: errors.append(f'console {m.type}: {m.text}') if m.type == 'error' else None)
    page.on('pageerror', lambda e: errors.append(f'page error: {e}'))
    page.on('requestfailed', lambda r: errors.append(f'request failed: {r.url}'))
    def only_local(route):
        if route.request.url.startswith(base): return route.continue_()
        errors.append(f'off-site request: {route.request.url}'); return route.abort()
    page.route('**/*', only_local)
    page.goto(f'{base}/{rel[:-6]}.html', wait_until='load')
    if page.locator('script[type="application/vnd.jupyter.widget-state+json"]').count():
        page.wait_for_selector('.jupyter-widgets', timeout=30_000) # the html manager rendered the saved state
    page.wait_for_timeout(500)
    ART.mkdir(parents=True, exist_ok=True)
    shot = ART/f"docs-{rel[:-6].replace('/', '-')}.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f'screenshot: {shot}')
    return page, errors

def test_index_page(browser, server):
    page, errors = visit(browser, server, 'index.ipynb')
    assert errors == []
    text = page.inner_text('body')
    assert 'A five-minute tour' in text and 'documents indexed' in text
    assert re.search(r'docs/11_fusion\.md:\d+ #[0-9a-f]{6} ', text) # a keyword result, executed for this page
    assert 'docs/02_chunk.md' in text                               # a hybrid result
    if 'search_ui(' in (NBS/'index.ipynb').read_text(encoding='utf-8'):             # the tour ends with the search widget...
        w = page.locator('.jupyter-widgets').last
        assert w.is_visible() and 'docs/' in w.inner_text()        # ...rendered from its saved state, with results
    page.close()

@pytest.mark.skipif(not (NBS/'tutorials'/'ranking.ipynb').exists(), reason='no ranking tutorial yet')
def test_ranking_tutorial_page(browser, server):
    page, errors = visit(browser, server, 'tutorials/ranking.ipynb')
    assert errors == []
    text = page.inner_text('body')
    assert 'nDCG@10' in text
    if page.locator('script[type="application/vnd.jupyter.widget-state+json"]').count():
        assert page.locator('.jupyter-widgets').last.is_visible()
    page.close()
