"""Filtered keyword search on tldr-pages-scale data, in process.

Usage: python bench/bench_filter.py [--queries 300]

tldr pages carry no labels or dates, so the bench copies the 7,425 pages into a temporary folder with front matter
added: `tags` from the platform folder (common, linux, osx, ...) plus one of four topic tags, and `created`/`updated`
dates spread over 2019-2026 (deterministic). It indexes the copy and times `search()` with a label + date-range
filter, against the same queries unfiltered, and checks that every filtered result satisfies the filter.
Goal (issue 5): filtered search p50 <= 5 ms.
"""
import argparse, datetime as dt, json, random, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent/'shared'/'data'/'tldr-pages'
TOPICS = ('network', 'files', 'dev', 'system')

def pct(xs, p): xs = sorted(xs); return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

def copy_with_front_matter(dst:Path) -> list[str]:
    "Copy every page with tags and dates; return the pages' description lines (the queries)."
    rnd, queries = random.Random(7), []
    start = dt.date(2019, 1, 1).toordinal()
    for src in sorted(DATA.rglob('*.md')):
        if src.name == 'LICENSE.md': continue
        rel = src.relative_to(DATA)
        text = src.read_text(encoding='utf-8')
        created = dt.date.fromordinal(start + rnd.randrange(0, 6 * 365))
        updated = dt.date.fromordinal(created.toordinal() + rnd.randrange(0, 700))
        tags = [rel.parts[-2], rnd.choice(TOPICS)]
        out = dst/rel; out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(f"---\ntags: [{', '.join(tags)}]\ncreated: {created}\nupdated: {updated}\n---\n{text}", encoding='utf-8')
        desc = next((l[2:].strip() for l in text.splitlines() if l.startswith('> ') and 'More information' not in l), None)
        if desc: queries.append(desc)
    return queries

def main():
    ap = argparse.ArgumentParser(); ap.add_argument('--queries', type=int, default=300); args = ap.parse_args()
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.index import add_collection
    from qmd_nb.engine.search import search
    from qmd_nb.engine.filter import parse_filter, facets
    tmp = Path(tempfile.mkdtemp(prefix='qmd-nb-bench-filter-'))
    queries = copy_with_front_matter(tmp/'tldr')
    st = Store('bench', env={'QMD_NB_HOME': str(tmp/'home')})
    t = time.perf_counter(); add_collection(st, str(tmp/'tldr'), name='tldr', progress=False); index_s = time.perf_counter() - t
    qs = random.Random(1).sample(queries, min(args.queries, len(queries)))
    flt = {'labels': ['linux', 'network'], 'updated_after': '2022-01-01', 'updated_before': '2025-01-01'}
    f = parse_filter(flt)
    t = time.perf_counter(); facets(st); facets_s = time.perf_counter() - t # once per catalog change
    for q in qs[:20]: search(st, q, 10); search(st, q, 10, filter=flt) # warm caches
    plain, filtered, n, ok = [], [], 0, True
    for q in qs:
        t = time.perf_counter(); search(st, q, 10); plain.append(time.perf_counter() - t)
        t = time.perf_counter(); res = search(st, q, 10, filter=flt); filtered.append(time.perf_counter() - t)
        n += len(res)
        for r in res: # every result must satisfy the filter
            meta = json.loads(st.q("SELECT meta FROM documents WHERE collection=? AND path=?", (r.collection, r.path))[0][0])
            ok &= bool({'linux', 'network'} & set(meta['tags'])) and '2022-01-01' <= meta['updated'] < '2025-01-01'
    ms = lambda xs, p: round(pct(xs, p) * 1000, 2)
    print(json.dumps(dict(documents=st.q("SELECT count(*) FROM documents")[0][0], index_s=round(index_s, 1),
                          facets_build_ms=round(facets_s * 1000, 1), queries=len(qs), filter=flt,
                          plain_p50_ms=ms(plain, 50), plain_p95_ms=ms(plain, 95),
                          filtered_p50_ms=ms(filtered, 50), filtered_p95_ms=ms(filtered, 95),
                          filtered_results_per_query=round(n / len(qs), 2), all_results_pass_filter=ok,
                          goal_filtered_p50_ms=5.0), indent=2))

if __name__ == '__main__': main()
