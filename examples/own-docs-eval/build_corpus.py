"""Rebuild corpus.jsonl.gz of the own-docs evaluation set from the notebooks in nbs/.

Each module notebook is cut at its `## ` headings: one document per section (the text before the first heading is
the notebook's own document). A document is the section's markdown and the source of its shown code cells
(`#| hide` cells, which hold edge-case tests, and directive lines are left out; outputs too). Ids are
`NOTEBOOK#section-slug` (`NOTEBOOK` alone for the text before the first heading), titles `Notebook title: Section`.
index.ipynb and tutorials/ are left out: they retell the modules, which would make every known item ambiguous.
The corpus is stored gzip-compressed (a BEIR folder may hold `corpus.jsonl.gz`; `qmd-nb eval` reads either), written
without a time stamp so that the same notebooks give the same bytes.

    python examples/own-docs-eval/build_corpus.py            # rewrite corpus.jsonl.gz
    python examples/own-docs-eval/build_corpus.py --check    # fail when qrels.tsv names an id the notebooks lost

queries.jsonl and qrels.tsv are written by hand: each query is what someone who half-remembers one section would type.
"""
import gzip, json, re, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NBS = HERE.parents[1]/'nbs'

def slug(s:str) -> str: return re.sub(r'[^a-z0-9]+', '-', s.lower()).strip('-')

def shown(src:str) -> str:
    "A code cell's source without its directive lines, or '' for hidden cells."
    lines = src.split('\n')
    if any(re.match(r'#\|\s*hide\s*$', l.strip()) for l in lines): return ''
    return '\n'.join(l for l in lines if not l.lstrip().startswith('#|')).strip()

def sections(nb_path:Path) -> list[dict]:
    "The notebook's documents: {_id, title, text} per `## ` section."
    cells = json.loads(nb_path.read_text(encoding='utf-8'))['cells']
    title, docs, cur = nb_path.stem, [], None
    for c in cells:
        src = ''.join(c['source'])
        if c['cell_type'] == 'markdown':
            m = re.match(r'#\s+(.+)', src)
            if m and cur is None and not docs: title = m.group(1).strip()
            h2 = re.search(r'^##\s+(.+)$', src, re.M)
            if h2:
                cur = dict(_id=f'{nb_path.stem}#{slug(h2.group(1))}', title=f'{title}: {h2.group(1).strip()}', parts=[])
                docs.append(cur)
                src = src.replace(h2.group(0), '', 1)
            elif cur is None:
                cur = dict(_id=nb_path.stem, title=title, parts=[]); docs.append(cur)
            text = src.strip()
        elif c['cell_type'] == 'code': text = shown(src)
        else: text = ''
        if text:
            if cur is None: cur = dict(_id=nb_path.stem, title=title, parts=[]); docs.append(cur)
            cur['parts'].append(text)
    seen, out = set(), []
    for d in docs:
        i, n = d['_id'], 2
        while i in seen: i, n = f"{d['_id']}-{n}", n + 1
        seen.add(i)
        out.append(dict(_id=i, title=d['title'], text='\n\n'.join(d['parts'])))
    return out

def corpus(nbs:Path=NBS) -> list[dict]:
    "Every module notebook's sections, in notebook order."
    return [d for p in sorted(nbs.rglob('[0-9]*.ipynb'), key=lambda p: p.name) for d in sections(p)]

def qrel_ids(path:Path=HERE/'qrels.tsv') -> set[str]:
    lines = path.read_text(encoding='utf-8').splitlines()[1:]
    return {l.split('\t')[1] for l in lines if l.strip()}

if __name__ == '__main__':
    docs = corpus()
    if '--check' in sys.argv:
        missing = sorted(qrel_ids() - {d['_id'] for d in docs})
        if missing: sys.exit(f"qrels.tsv names sections the notebooks no longer have: {', '.join(missing)}")
        print(f"{len(docs)} sections; every judged section is still there")
    else:
        data = ''.join(json.dumps(d, ensure_ascii=False) + '\n' for d in docs).encode('utf-8')
        (HERE/'corpus.jsonl.gz').write_bytes(gzip.compress(data, 9, mtime=0))
        print(f"{len(docs)} sections, {sum(len(d['text']) for d in docs):,} characters -> {HERE/'corpus.jsonl.gz'} ({len(data):,} bytes before compression)")
