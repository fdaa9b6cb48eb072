"""Write README.md from nbs/index.ipynb without Quarto (which cannot be installed everywhere).

Markdown cells are copied; code cells become ```python blocks, their saved outputs ``` blocks; `#|` directive
lines and hidden cells are dropped. A widget output (which only lives in Jupyter or on the docs site) becomes a line
saying so instead of its text form. `--check` fails when README.md is not what index.ipynb gives.
Where Quarto exists, `nbdev-readme` renders the same notebook.
"""
import json, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def cell_md(c) -> str:
    src = ''.join(c['source'])
    if c['cell_type'] == 'markdown': return src.strip()
    if c['cell_type'] != 'code': return ''
    lines = src.split('\n')
    if any(l.strip() in ('#| hide', '#|hide') for l in lines): return ''
    code = '\n'.join(l for l in lines if not l.startswith('#|')).strip()
    out, widget = [], False
    for o in c.get('outputs', []):
        if 'application/vnd.jupyter.widget-view+json' in o.get('data', {}): widget = True
        elif o.get('output_type') == 'stream': out.append(''.join(o['text']))
        elif 'text/markdown' in o.get('data', {}): out.append(''.join(o['data']['text/markdown']))
        elif 'text/plain' in o.get('data', {}): out.append(''.join(o['data']['text/plain']))
    text = f'```python\n{code}\n```' if code else ''
    if out: text += '\n\n```\n' + ''.join(out).rstrip('\n') + '\n```'
    if widget: text += '\n\n*(an interactive widget: it shows when the notebook runs in Jupyter, and on the documentation site)*'
    return text

def render(nb_path: Path) -> str:
    nb = json.loads(nb_path.read_text(encoding='utf-8'))
    parts = [p for p in (cell_md(c) for c in nb['cells']) if p]
    return '<!-- Generated from nbs/index.ipynb by tools/readme.py: edit the notebook, not this file. -->\n\n' + '\n\n'.join(parts) + '\n'

if __name__ == '__main__':
    text = render(ROOT/'nbs'/'index.ipynb')
    if '--check' in sys.argv:
        if (ROOT/'README.md').read_text(encoding='utf-8') != text:
            sys.exit("README.md differs from nbs/index.ipynb: run `python tools/readme.py`")
    else: (ROOT/'README.md').write_text(text, encoding='utf-8')
