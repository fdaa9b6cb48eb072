"""Render the notebooks in nbs/ to a static HTML site, without Quarto (which cannot be installed everywhere).

Where Quarto exists, `nbdev-docs` builds the real site from nbs/_quarto.yml. This script makes a plain one that
works offline, for reading and for the docs test (tests/test_docs_site.py):

* every notebook becomes a page from its saved outputs (no execution), in the order of nbs/sidebar.yml;
* the notebooks named with `--execute` run first (nbclient, a fresh kernel per notebook, working folder nbs/ as
  for nbdev-test), with the state of their widgets saved so the page shows them; cells flagged with a test flag of
  pyproject.toml (`#| slow`, `#| notest`) or `#| eval: false` are not run and keep their saved outputs;
* nbdev conventions apply: `#| hide` cells are left out, directive lines are dropped, `#| echo: false` hides the
  source;
* widget pages load require.js and @jupyter-widgets/html-manager from `_static/`, copied from the cache that
  tools/widget_js.sh fills: nothing is fetched from the network when a page is opened.

    python tools/render_docs.py                      # saved outputs only, into build/docs
    python tools/render_docs.py --execute index.ipynb tutorials/ranking.ipynb --out build/docs
    python tools/render_docs.py --sidebar            # nbs/sidebar.yml from the notebooks (--check-sidebar checks)
    python tools/render_docs.py --save-widgets index.ipynb tutorials/ranking.ipynb

`--save-widgets` runs the notebooks as `--execute` does and writes them back into nbs/ with their widget state, so
that Quarto (`nbdev-docs`), GitHub and Jupyter show the widgets from the committed notebook (after
`nbdev-test --save --flags slow`, whose saved outputs of the flagged cells it keeps). Then `nbdev-clean --fname` them.

Otherwise nothing is written into nbs/."""
from __future__ import annotations
import argparse, copy, html, os, re, shutil, subprocess, sys, time, tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT/'nbs'
DIRECTIVE = re.compile(r'^\s*#\|\s*(.*?)\s*$')

def directives(src:str) -> dict:
    "The `#| key: value` / `#| flag` lines at the top of a cell."
    out = {}
    for line in src.split('\n'):
        m = DIRECTIVE.match(line)
        if not m:
            if line.strip(): break
            continue
        k, _, v = m.group(1).partition(':')
        out[k.strip()] = v.strip()
    return out

def test_flags() -> set[str]:
    "The `tst_flags` of pyproject.toml: cells flagged with them do not run by default."
    cfg = tomllib.loads((ROOT/'pyproject.toml').read_text(encoding='utf-8')).get('tool', {}).get('nbdev', {})
    return set(str(cfg.get('tst_flags', '')).split())

def skip_cell(src:str, flags:set[str]) -> bool:
    d = directives(src)
    return bool(flags & set(d)) or d.get('eval', '').lower() == 'false'

SECTIONS = [ # (section, folder of nbs/); tutorials/ come first, then the packages in the order the imports go
    ('Engine', 'engine'), ('Tool profiles', 'profiles'), ('Serving agents', 'serve'), ('In notebooks', 'notebook'),
    ('Command line', '')]

def notebooks() -> list[str]:
    "Every notebook of the site, relative to nbs/ (folders and files starting with `_` or `.` are not pages)."
    return sorted(str(p.relative_to(NBS)) for p in NBS.rglob('*.ipynb')
                  if not any(part.startswith(('_', '.')) for part in p.relative_to(NBS).parts))

def sidebar_yml() -> str:
    "nbs/sidebar.yml for Quarto: the tutorial first, then the tutorials, then the modules by number range."
    import yaml
    nbs, contents = notebooks(), ['index.ipynb']
    tut = [p for p in nbs if p.startswith('tutorials/')]
    if tut: contents.append({'section': 'Tutorials', 'contents': tut})
    for name, folder in SECTIONS:
        part = [p for p in nbs if str(Path(p).parent).strip('.') == folder and re.match(r'\d+', Path(p).name)]
        if part: contents.append({'section': name, 'contents': part})
    dev = [p for p in nbs if '/' not in p and p != 'index.ipynb' and not re.match(r'\d', p)] # guides for developers
    if dev: contents.append({'section': 'Developing', 'contents': dev})
    rest = [p for p in nbs if p not in contents and not any(isinstance(c, dict) and p in c['contents'] for c in contents)]
    if rest: contents.append({'section': 'More', 'contents': rest})
    head = '# Written by `python tools/render_docs.py --sidebar` from the notebooks in nbs/: run it after adding one.\n'
    return head + yaml.safe_dump({'website': {'sidebar': {'contents': contents}}}, sort_keys=False)

def page_order() -> list[str]:
    "Notebook paths relative to nbs/, in the order of nbs/sidebar.yml, then any others sorted (index first)."
    import yaml
    listed = []
    def walk(items):
        for it in items or []:
            if isinstance(it, str): listed.append(it)
            elif isinstance(it, dict):
                if isinstance(it.get('href'), str): listed.append(it['href'])
                walk(it.get('contents'))
    sb = NBS/'sidebar.yml'
    if sb.exists(): walk(yaml.safe_load(sb.read_text(encoding='utf-8'))['website']['sidebar']['contents'])
    found = notebooks()
    found.sort(key=lambda p: (p != 'index.ipynb', p))
    return [p for p in listed if p in found] + [p for p in found if p not in listed]

def execute(nb, path:Path, timeout:int=600):
    "Run a notebook with nbclient in `path`'s folder, widget state saved; flagged cells keep their saved outputs."
    from nbclient import NotebookClient
    flags = test_flags()
    class Client(NotebookClient):
        async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
            if cell.cell_type == 'code' and skip_cell(cell.source, flags): return cell
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
    env = dict(os.environ, HF_HUB_OFFLINE='1', TRANSFORMERS_OFFLINE='1')
    Client(nb, timeout=timeout, kernel_name='python3', store_widget_state=True,
           resources={'metadata': {'path': str(path.parent)}}).execute(env=env)
    return nb

def for_docs(nb):
    "Apply nbdev's display directives: drop hidden cells and directive lines, hide sources marked `echo: false`."
    nb = copy.deepcopy(nb)
    cells = []
    for c in nb.cells:
        if c.cell_type != 'code': cells.append(c); continue
        d = directives(c.source)
        if 'hide' in d or 'default_exp' in d: continue
        c.source = '\n'.join(l for l in c.source.split('\n') if not DIRECTIVE.match(l)).strip('\n')
        tags = set(c.metadata.get('tags', []))
        c.metadata = {k: v for k, v in c.metadata.items() if k in ('tags', 'jupyter')}
        if d.get('echo', '').lower() == 'false': tags.add('remove_input')
        if d.get('output', '').lower() == 'false': tags.add('remove_output')
        c.metadata['tags'] = sorted(tags)
        if c.source or c.get('outputs'): cells.append(c)
    nb.cells = cells
    return nb

TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}<style>
nav.qmd-nav {font: 14px/1.5 system-ui, sans-serif; padding: 8px 16px; border-bottom: 1px solid #ddd; margin-bottom: 12px}
nav.qmd-nav a {margin-right: 12px; white-space: nowrap} nav.qmd-nav a.current {font-weight: bold}
</style>{%- endblock extra_css -%}
{% block body_header %}{{ super() }}
<nav class="qmd-nav">{{ resources.qmd_nav }}</nav>
{% endblock body_header %}
"""

def nav_html(pages:list[str], current:str) -> str:
    up = '../' * current.count('/')
    def label(p):
        name = Path(p).stem
        return 'Home' if p == 'index.ipynb' else re.sub(r'^\d+[a-z]?_', '', name).replace('_', ' ')
    return ' '.join(f'<a href="{up}{p[:-6]}.html"{" class=current" if p == current else ""}>{html.escape(label(p))}</a>'
                    for p in pages)

_exporters = {}

def to_html(nb, rel:str, pages:list[str]) -> str:
    "A page for the notebook at nbs/`rel`, referencing the widget JavaScript under `_static/`."
    up = '../' * rel.count('/')
    if up not in _exporters: _exporters[up] = exporter(up)
    body, _ = _exporters[up].from_notebook_node(nb, resources={'metadata': {'name': Path(rel).stem}, 'qmd_nav': nav_html(pages, rel)})
    return re.sub(r'href="([^":#]+?)\.ipynb(#[^"]*)?"', r'href="\1.html\2"', body) # links between notebooks

def exporter(up:str):
    "nbconvert's lab template without MathJax and Mermaid (both from a CDN), with a page list on top."
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter
    from traitlets.config import Config
    c = Config()
    c.TagRemovePreprocessor.enabled = True
    c.TagRemovePreprocessor.remove_input_tags = {'remove_input'}
    c.TagRemovePreprocessor.remove_all_outputs_tags = {'remove_output'}
    ex = HTMLExporter(config=c, template_name='lab', extra_loaders=[DictLoader({'qmd_docs.html.j2': TEMPLATE})],
                      template_file='qmd_docs.html.j2', require_js_url=f'{up}_static/requirejs/require.js',
                      widget_renderer_url=f'{up}_static/html-manager/embed-amd.js')
    return ex

def widget_js() -> Path|None:
    "The cached widget JavaScript (tools/widget_js.sh fetches it when missing), or None."
    r = subprocess.run(['bash', str(ROOT/'tools'/'widget_js.sh')], capture_output=True, text=True, encoding='utf-8')
    if r.returncode != 0: print(r.stderr.strip(), file=sys.stderr); return None
    return Path(r.stdout.strip())

def render(out:Path, execute_:list[str]=(), only:list[str]|None=None) -> list[Path]:
    "Write the site into `out`; return the pages written."
    import nbformat
    pages, written = page_order(), []
    for rel in execute_:
        if rel not in pages: sys.exit(f"render_docs: no notebook nbs/{rel}")
    out.mkdir(parents=True, exist_ok=True)
    js = widget_js()
    if js:
        for sub in ('html-manager', 'requirejs'):
            if (out/'_static'/sub).exists(): shutil.rmtree(out/'_static'/sub)
            shutil.copytree(js/sub, out/'_static'/sub)
    for rel in (only or pages):
        path = NBS/rel
        nb = nbformat.read(path, as_version=4)
        if rel in execute_:
            t = time.time(); execute(nb, path)
            print(f'executed {rel} in {time.time() - t:.1f} s', file=sys.stderr)
        dest = out/(rel[:-6] + '.html')
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(to_html(for_docs(nb), rel, pages), encoding='utf-8')
        written.append(dest)
    return written

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--out', default=str(ROOT/'build'/'docs'), help='output folder (default build/docs)')
    ap.add_argument('--execute', nargs='*', default=[], help='notebooks (relative to nbs/) to run before rendering')
    ap.add_argument('--only', nargs='*', help='render only these notebooks (relative to nbs/)')
    ap.add_argument('--sidebar', action='store_true', help='write nbs/sidebar.yml (every notebook) and stop')
    ap.add_argument('--check-sidebar', action='store_true', help='fail when nbs/sidebar.yml misses a notebook')
    ap.add_argument('--save-widgets', nargs='*', default=[], help='run these notebooks and save them with their widget state')
    a = ap.parse_args()
    if a.save_widgets:
        import nbformat
        for rel in a.save_widgets:
            nb = nbformat.read(NBS/rel, as_version=4)
            execute(nb, NBS/rel)
            nbformat.write(nb, NBS/rel)
            print(f'saved {rel} with the state of {len(nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {}))} widget models')
        sys.exit()
    if a.sidebar: (NBS/'sidebar.yml').write_text(sidebar_yml(), encoding='utf-8'); sys.exit()
    if a.check_sidebar:
        sb = NBS/'sidebar.yml'
        if not sb.exists() or sb.read_text(encoding='utf-8') != sidebar_yml():
            sys.exit("nbs/sidebar.yml does not list the notebooks in nbs/: run `python tools/render_docs.py --sidebar`")
        sys.exit()
    for p in render(Path(a.out), a.execute, a.only): print(p)
