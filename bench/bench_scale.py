"""Issue 15's figures at each corpus size: what costs follow the change, and what still follows the corpus.

Usage:
  python bench/make_corpus.py docs /tmp/qmdnb-corpus && python bench/make_corpus.py vectors /tmp/qmdnb-corpus
  python bench/bench_scale.py --corpus /tmp/qmdnb-corpus [--sizes 10k,14k,30k,100k] [--saves 10] [--no-watch]
         [--vectors-only] [--chroma-url auto|http://HOST:PORT]

Sizes: 14k is a copy of ../shared/data/winserver-ps (made once as CORPUS/ws14k: the bench edits files, and the shared data
must stay as it is); 10k, 30k and 100k are make_corpus.py's folders. For each size, in a
fresh QMD_NB_HOME (under --home): first index (`qmd-nb collection add`), `update` with nothing changed (median of 7
processes) and with one file changed (median of 5), a `qmd-nb search` process start to exit (median of 7, and its
peak RSS), in-process keyword `search` p50 over the corpus's queries, and, with --saves N, the watcher: a
`qmd-nb serve --watch` process, N files saved one after the other, each timed from the write until REST /search finds
it (keyword) and until /vsearch ranks it (vector; the corpus gets synthetic vectors first, a few per document as the
model would chunk it, so the store has its real size and the watcher embeds each save with the real model).
Then vsearch p50 on make_corpus.py's 1M-chunk set: in-process with the embedded Chroma store, and with --chroma-url
against a Chroma server (`auto` starts `chroma run` on loopback over the same files), unfiltered and restricted to a
collection holding 10% and 90% of the chunks (p50 of wall and of the process's CPU time); the query embedding is included, as a
user waits for it; then `qmd-nb vsearch` processes, unfiltered and restricted to the 10% collection.
Prints a table with the goals and writes bench/scale_results.json (the notebook nbs/12b_scale plots it).
--phases picks what to measure (process,equal,keyword,breakdown,watch; default all; equal: the incremental index's
keyword top 10 after the one-file updates against the same catalog's index built whole) and --keep-home reuses each size's index
(and its vectors) from the last run: e.g. `--phases watch,breakdown --keep-home` re-measures the watcher in minutes, and
`--phases process --keep-home` the update and search processes without a first index (its figures stay from the last run).
The package is byte-compiled first, as an installed one is (a process run from source compiles every module it imports).
"""
import argparse, json, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent/'shared'/'data'
QMD = str(Path(sys.executable).parent/'qmd-nb')
GOALS = {'14k': dict(update_nochange_s=0.3, update_one_s=0.5, search_process_s=0.3, first_index_s=20, keyword_p50_ms=3, watch_keyword_s=1, watch_vector_s=5),
         '100k': dict(update_nochange_s=1.0, update_one_s=1.0, search_process_s=0.4, search_peak_mib=150, first_index_s=150, keyword_p50_ms=10, watch_keyword_s=1, watch_vector_s=5),
         '1M': dict(vsearch_embedded_p50_ms=50, vsearch_server_p50_ms=100)}

def med(xs): return statistics.median(xs)

def timed(args, env, cpu:bool=False) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one qmd-nb process, from wait4; with `cpu`, (wall, CPU seconds): on a loaded machine
    the process's own CPU time (user + system) is what an idle machine's wall time would be, near enough."""
    t = time.perf_counter()
    p = subprocess.Popen([QMD, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0); wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status): raise SystemExit(f"qmd-nb {' '.join(args)} failed: {p.stderr.read().decode()}")
    return (wall, ru.ru_utime + ru.ru_stime) if cpu else (wall, ru.ru_maxrss / 1024)

def folder_of(size:str, corpus:Path) -> Path:
    "The folder of a size; 14k is a private copy of winserver-ps (the bench writes into the folder it measures)."
    if size != '14k': return corpus/f'c{size}'
    copy = corpus/'ws14k'
    if not (copy/'docset').is_dir():
        shutil.rmtree(copy, ignore_errors=True); shutil.copytree(DATA/'winserver-ps'/'docset', copy/'docset')
        for p in copy.rglob('*'): p.chmod(0o755 if p.is_dir() else 0o644) # the shared data is read-only
    return copy

def queries_of(folder:Path) -> list[str]:
    "Latency queries: make_corpus.py's descriptions, or winserver-ps's known-item sentences."
    f = folder/'queries.txt'
    if f.exists(): return [q for q in f.read_text(encoding='utf-8').split('\n') if q.strip()]
    return [l.split('\t')[0] for l in (folder/'knownitem-400.tsv').read_text(encoding='utf-8').split('\n') if l.strip()]

def process_figures(folder:Path, env:dict, q:str, first_index:bool=True # False: the index exists (--keep-home), its first-index figures are kept
                   ) -> dict:
    "First index, update (nothing / one file changed), search process; the folder is indexed as collection 'c'."
    first, first_cpu = timed(['collection', 'add', str(folder), '--name', 'c'], env, cpu=True) if first_index else (None, None)
    timed(['update'], env) # the first update after an add may re-read files written during it (the racy rule)
    nochange = [timed(['update'], env, cpu=True) for _ in range(7)]
    victim = next(p for p in sorted(folder.rglob('*.md')) if p.stat().st_size > 500)
    orig, one = victim.read_bytes(), []
    try:
        for k in range(5):
            victim.write_bytes(orig + f'\nEdited for the bench, round {k}.\n'.encode()); one.append(timed(['update'], env, cpu=True))
    finally: # put it back, then update twice, a second apart: the file is no longer racy (see qmd_nb.engine.scan.racy)
        victim.write_bytes(orig); timed(['update'], env); time.sleep(1.1); timed(['update'], env)
    srch = [timed(['search', q, '-n', '10'], env) for _ in range(7)]
    cpu = [timed(['search', q, '-n', '10'], env, cpu=True)[1] for _ in range(7)]
    return dict(**(dict(first_index_s=first, first_index_cpu_s=first_cpu) if first_index else {}), update_nochange_s=med(w for w, _ in nochange), update_one_s=med(w for w, _ in one),
                search_process_s=med(s[0] for s in srch), search_peak_mib=max(s[1] for s in srch),
                update_nochange_cpu_s=med(c for _, c in nochange), update_one_cpu_s=med(c for _, c in one), search_process_cpu_s=med(cpu))

def keyword_p50(env:dict, queries:list[str]) -> tuple[float, float]:
    "In-process keyword search p50 (ms) over the queries, warm: wall time, and the thread's own CPU time (what a loaded machine does not inflate)."
    code = f"""
import json, statistics, time
from qmd_nb.engine.store import Store
from qmd_nb.engine.search import search
st = Store(env={{'QMD_NB_HOME': {env['QMD_NB_HOME']!r}}}); qs = {queries[:300]!r}
for q in qs[:30]: search(st, q, 10)
lat, cpu = [], []
for q in qs:
    t, c = time.perf_counter(), time.thread_time(); search(st, q, 10)
    lat.append((time.perf_counter() - t) * 1000); cpu.append((time.thread_time() - c) * 1000)
print(statistics.median(lat), statistics.median(cpu))"""
    wall, cpu = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, encoding='utf-8', check=True).stdout.split()
    return float(wall), float(cpu)

EQUAL = """
import json, sys, time
from qmd_nb.engine.store import Store
from qmd_nb.engine.search import search
from qmd_nb.engine.keyword import refresh, load_commit
st = Store(env={'QMD_NB_HOME': sys.argv[1]}); qs = json.loads(sys.argv[2])
top = lambda: {q: [(r.path, round(r.score, 6)) for r in search(st, q, 10, collapse=False)] for q in qs}
segs = len(load_commit(st.paths.keyword_dir)['segments']); a = top()
t = time.perf_counter(); refresh(st, full=True); full = time.perf_counter() - t
b = top()
print(json.dumps(dict(segments=segs, queries=len(qs), identical=sum(a[q] == b[q] for q in qs), hits=sum(len(v) for v in a.values()), keyword_full_build_s=full)))
"""

def equal_to_full(env:dict, queries:list[str]) -> dict:
    """After the one-file updates (segments and deletion lists): keyword top 10 (paths and scores) of the incremental index
    against the same catalog's index built whole, over 100 queries, and how long that whole build took."""
    out = subprocess.run([sys.executable, '-c', EQUAL, env['QMD_NB_HOME'], json.dumps(queries[:100])], env=env, capture_output=True, text=True, encoding='utf-8', check=True).stdout
    return json.loads(out)

def synthetic_vectors(env:dict, chars_per_chunk:int=800):
    "Give every document of the index vectors (random unit vectors, as many as the model would make chunks), unless it has them."
    code = f"""
import hashlib, numpy as np
from qmd_nb.engine.store import Store
from qmd_nb.engine.embed import get_embedder
from qmd_nb.engine.vectors import record_embedded, pending_hashes
from qmd_nb.engine.chroma import VectorStore
st = Store(env={{'QMD_NB_HOME': {env['QMD_NB_HOME']!r}}}); emb = get_embedder(st.config.settings)
todo = pending_hashes(st, emb.fingerprint)
sizes = dict(st.q("SELECT hash, MAX(size) FROM documents GROUP BY hash"))
vs, rng = VectorStore(st, emb.fingerprint), np.random.default_rng(0)
for k in range(0, len(todo), 500):
    part = {{h: max(1, (sizes.get(h) or 0) // {chars_per_chunk}) for h in todo[k:k+500]}}
    ids = [f'{{h}}:{{s}}' for h, n in part.items() for s in range(n)]
    V = rng.standard_normal((len(ids), emb.dim)).astype('float32'); V /= np.linalg.norm(V, axis=1, keepdims=True)
    for j in range(0, len(ids), 5000):
        vs.col.upsert(ids=ids[j:j+5000], embeddings=V[j:j+5000], metadatas=[dict(hash=i.split(':')[0], seq=int(i.split(':')[1]), start=1, end=1) for i in ids[j:j+5000]])
    record_embedded(st, emb.fingerprint, part)
print(len(todo))"""
    t = time.time(); n = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, encoding='utf-8', check=True).stdout.strip()
    print(f"  synthetic vectors for {n} contents in {time.time() - t:.0f} s", file=sys.stderr, flush=True)

BREAKDOWN = """
import time; t0 = time.perf_counter()
from qmd_nb.parser import build_parser
t1 = time.perf_counter()
import qmd_nb.engine.index as I
t2 = time.perf_counter()
from qmd_nb.engine.store import Store
from qmd_nb.engine.catalog import scan_started
from qmd_nb.engine.scan import load_snapshots, unchanged_since
st = Store(); c = next(iter(st.config.collections.values()))
t3 = time.perf_counter(); ls = I.listing(c.path, c.masks)
t4 = time.perf_counter(); snap = load_snapshots(st).get(c.name)
t5 = time.perf_counter(); same = snap is not None and unchanged_since(ls, snap, scan_started(st, c.name))
t6 = time.perf_counter(); I.refresh_keyword(st)
t7 = time.perf_counter()
ms = lambda a, b: round((b - a) * 1000, 1)
print(dict(start_and_cli_ms=ms(t0, t1), import_index_ms=ms(t1, t2), store_config_ms=ms(t2, t3), listing_ms=ms(t3, t4),
           snapshot_load_ms=ms(t4, t5), compare_ms=ms(t5, t6), keyword_check_ms=ms(t6, t7), unchanged=len(ls.keys) if same else 0))
"""

def update_breakdown(env:dict) -> dict:
    "Where a no-change update's time goes, phase by phase (median of 5 processes): the walk, the catalog's snapshot, their comparison."
    runs = [eval(subprocess.run([sys.executable, '-c', BREAKDOWN], env=env, capture_output=True, text=True, encoding='utf-8', check=True, cwd=tempfile.gettempdir()).stdout)
            for _ in range(5)]
    return {k: med([r[k] for r in runs]) for k in runs[0]}

def free_port() -> int:
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def post(url, path, body) -> dict:
    import urllib.request
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {'Content-Type': 'application/json'})
    with urllib.request.urlopen(req, timeout=120) as r: return json.loads(r.read())

def get(url, path) -> dict:
    import urllib.request
    with urllib.request.urlopen(url + path, timeout=60) as r: return json.loads(r.read())

def until(cond, timeout=600, every=0.02, what='the condition'):
    t = time.time()
    while time.time() - t < timeout:
        if cond(): return time.time()
        time.sleep(every)
    raise TimeoutError(f"gave up waiting for {what} after {timeout} s")

def no_warm_up(env:dict):
    """Rerank hybrid queries with nothing: a server with vectors otherwise spends its first hours (at these sizes) embedding
    every document's sentence windows in the background, once; the watcher is measured in the steady state after it."""
    cfg = Path(env['QMD_NB_HOME'])/'config'/'index.json'
    d = json.loads(cfg.read_text(encoding='utf-8')); d.setdefault('settings', {}).setdefault('query', {})['rerank'] = 'none'
    cfg.write_text(json.dumps(d, indent=2), encoding='utf-8')

def watch_figures(folder:Path, env:dict, saves:int, vectors:bool=True) -> dict:
    "Median seconds from writing a file to keyword / vector search finding it (`vectors`: the index has vectors), through `qmd-nb serve --watch`."
    port = free_port(); url = f'http://127.0.0.1:{port}'
    no_warm_up(env)
    p = subprocess.Popen([QMD, 'serve', '--transport', 'http', '--port', str(port), '--watch', '--no-auth'], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    drop = folder/'bench-watch'; shutil.rmtree(drop, ignore_errors=True)
    sample = [p_ for p_ in sorted(folder.rglob('*.md')) if 2000 < p_.stat().st_size < 8000][:saves]
    kw, vec = [], []
    try:
        until(lambda: _ok(lambda: get(url, '/health')['model_loaded']), 300, what='the model to load')
        until(lambda: _ok(lambda: get(url, '/status')['freshness']['batches'] >= 1), 600, what='the watcher to catch up') # armed and caught up
        drop.mkdir()
        for i, src in enumerate(sample):
            word = f'quixotic{i}zebra{os.getpid()}'
            body = src.read_text(encoding='utf-8') + f'\n\nA {word} was seen here.\n'
            vq = ' '.join(body.split()[-60:]) # the end of the file: its last chunk
            t0 = time.time(); (drop/f'save-{i}.md').write_text(body, encoding='utf-8')
            kw.append(until(lambda: _ok(lambda: post(url, '/search', {'query': word, 'limit': 1})['results']), what=f'save {i} in keyword search') - t0)
            if vectors: vec.append(until(lambda: _ok(lambda: any(r['file'].endswith(f'save-{i}.md') for r in post(url, '/vsearch', {'query': vq, 'limit': 10, 'min_score': 0})['results'])),
                             what=f'save {i} in vector search') - t0)
            print(f"  save {i}: keyword {kw[-1]:.2f} s" + (f", vector {vec[-1]:.2f} s" if vectors else ''), file=sys.stderr, flush=True)
        fresh = get(url, '/status').get('freshness')
    except TimeoutError as e:
        print(f"  {e}; status: {_ok(lambda: get(url, '/status').get('freshness'))}", file=sys.stderr); fresh = None
    finally:
        p.send_signal(signal.SIGTERM); err = p.communicate(timeout=120)[1].decode(); shutil.rmtree(drop, ignore_errors=True)
        if fresh is None: print('  server said: ' + err[-2000:], file=sys.stderr)
    if not kw: return {}
    return dict(watch_keyword_s=med(kw), watch_saves=len(kw), watch_status=fresh['summary'] if fresh else None, **({'watch_vector_s': med(vec)} if vec else {}))

def _ok(fn):
    try: return fn()
    except (OSError, KeyError, ValueError): return False # not up yet, or an error answer (e.g. no vectors yet)

VSEARCH = """
import json, os, statistics, sys, time
from qmd_nb.engine.store import Store
from qmd_nb.engine.embed import get_embedder
from qmd_nb.engine.vectors import vsearch
st = Store(env={'QMD_NB_HOME': sys.argv[1]}); emb = get_embedder({})
qs = [q for q in open(sys.argv[2], encoding='utf-8').read().split('\\n') if q.strip()]
out = {}
for name, coll in (('unfiltered', None), ('10% collection', 'small'), ('90% collection', 'big')):
    t = time.perf_counter(); vsearch(st, emb, qs[0] + ' warm', 10, coll); first = (time.perf_counter() - t) * 1000
    for q in qs[:10]: vsearch(st, emb, q + ' ' + name, 10, coll)
    lat, cpu = [], []
    rest = qs[10:] or qs
    for k in range(100): # the descriptions again and again, each time with other words (no cached embedding)
        q = f'{rest[k % len(rest)]} {name} {k // len(rest)}'; t, c = time.perf_counter(), time.process_time(); vsearch(st, emb, q, 10, coll, 0.0)
        lat.append((time.perf_counter() - t) * 1000); cpu.append((time.process_time() - c) * 1000)
    out[name] = dict(p50=statistics.median(lat), p95=sorted(lat)[int(0.95 * len(lat))], first=first, cpu_p50=statistics.median(cpu))
import resource
print(json.dumps(dict(lat=out, peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
"""

def vsearch_run(home:Path, queries:Path, env:dict) -> tuple[dict, dict]:
    """(in-process latencies per filter, process figures): the VSEARCH loop, then `qmd-nb vsearch` processes start to exit
    (median of 3; each loads the model, and with the embedded store opens the 1M-chunk index) and their peak RSS."""
    r = json.loads(subprocess.run([sys.executable, '-c', VSEARCH, str(home), str(queries)], env=env, capture_output=True, text=True, encoding='utf-8', check=True).stdout)
    q = [l for l in queries.read_text(encoding='utf-8').split('\n') if l.strip()][-1]
    runs = [timed(['vsearch', f'{q} {k}', '-n', '10', '--min-score', '0'], {**env, 'QMD_NB_HOME': str(home)}) for k in range(3)]
    small = [timed(['vsearch', f'{q} {k}', '-n', '10', '--min-score', '0', '-c', 'small'], {**env, 'QMD_NB_HOME': str(home)}, cpu=True) for k in range(3)]
    return r['lat'], dict(loop_peak_mib=r['peak_mib'], cli_process_s=med([w for w, _ in runs]), cli_peak_mib=max(m for _, m in runs),
                          cli_small_process_s=med([w for w, _ in small]), cli_small_cpu_s=med([c for _, c in small]))

def vsearch_figures(corpus:Path, chroma_url:str|None) -> tuple[dict, dict]:
    "vsearch at 1M chunks, embedded Chroma, then (with a URL, or 'auto' for a `chroma run` here) a Chroma server: (latencies, process figures)."
    home = corpus/'vectors-1m'/'home'; queries = corpus/'vectors-1m'/'queries.txt'
    if not home.exists(): raise SystemExit(f"No vector set in {home}: run python bench/make_corpus.py vectors {corpus}")
    env = {k: v for k, v in os.environ.items() if k != 'QMD_NB_CHROMA_URL'}
    lat, proc = {}, {}
    lat['embedded'], proc['embedded'] = vsearch_run(home, queries, env)
    if chroma_url:
        server = None
        if chroma_url == 'auto':
            port = free_port(); chroma_url = f'http://127.0.0.1:{port}'
            server = subprocess.Popen([str(Path(sys.executable).parent/'chroma'), 'run', '--path', str(home/'cache'/'index'/'vectors'),
                                       '--host', '127.0.0.1', '--port', str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            until(lambda: _ok(lambda: get(chroma_url, '/api/v2/heartbeat')), 600, 0.2)
        try:
            lat['server'], proc['server'] = vsearch_run(home, queries, {**env, 'QMD_NB_CHROMA_URL': chroma_url})
            if server: proc['server']['server_rss_mib'] = _rss_mib(server.pid)
        finally:
            if server: server.send_signal(signal.SIGTERM); server.wait(60)
    return lat, proc

def _rss_mib(pid:int) -> float:
    "Resident memory of a running process (MiB)."
    for l in Path(f'/proc/{pid}/status').read_text(encoding='utf-8').split('\n'):
        if l.startswith('VmRSS:'): return int(l.split()[1]) / 1024
    return float('nan')

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--corpus', type=Path, required=True); ap.add_argument('--sizes', default='10k,14k,30k,100k')
    ap.add_argument('--home', type=Path, default=Path(tempfile.gettempdir())/'qmdnb-bench-scale'); ap.add_argument('--saves', type=int, default=10)
    ap.add_argument('--watch-vectors', default='10k,14k,30k,100k', help='sizes whose watcher is measured with vectors (the others: keyword only, no synthetic vectors)')
    ap.add_argument('--no-watch', action='store_true'); ap.add_argument('--vectors-only', action='store_true'); ap.add_argument('--no-vectors', action='store_true')
    ap.add_argument('--chroma-url', help="a Chroma server for the 1M-chunk vsearch ('auto': start `chroma run` on loopback)")
    ap.add_argument('--phases', default='process,equal,keyword,breakdown,watch'); ap.add_argument('--keep-home', action='store_true')
    ap.add_argument('--out', type=Path, default=ROOT/'bench'/'scale_results.json')
    a = ap.parse_args(); phases = set(a.phases.split(','))
    subprocess.run([sys.executable, '-m', 'compileall', '-q', str(ROOT/'qmd_nb')], check=True)
    results = json.loads(a.out.read_text(encoding='utf-8')) if a.out.exists() else {}
    results['machine'] = dict(cores=os.cpu_count(), load=os.getloadavg()[0], at=time.strftime('%Y-%m-%d %H:%M'))
    for size in ([] if a.vectors_only else a.sizes.split(',')):
        folder = folder_of(size, a.corpus); home = a.home/size
        fresh = not a.keep_home or not (home/'config').exists() # the first index is timed from nothing
        if fresh: shutil.rmtree(home, ignore_errors=True)
        env = {**os.environ, 'QMD_NB_HOME': str(home)}; env.pop('QMD_NB_CHROMA_URL', None)
        qs = queries_of(folder if size != '14k' else DATA/'winserver-ps')
        print(f"{size}: {folder}", file=sys.stderr, flush=True)
        r = {} if 'process' in phases and fresh else dict(results.get('sizes', {}).get(size, {})) # a partial run keeps the other figures
        if 'process' in phases: r.update(process_figures(folder, env, qs[0], first_index=fresh))
        elif fresh: timed(['collection', 'add', str(folder), '--name', 'c'], env)
        else: timed(['update'], env)
        r['documents'] = int(json.loads(timed_out(['status', '--json'], env))['total_documents'])
        if 'equal' in phases: r['equal_to_full'] = equal_to_full(env, qs)
        if 'keyword' in phases: r['keyword_p50_ms'], r['keyword_p50_cpu_ms'] = keyword_p50(env, qs)
        if 'breakdown' in phases: r['update_breakdown'] = update_breakdown(env)
        if 'watch' in phases and not a.no_watch and a.saves:
            vec = size in a.watch_vectors.split(',')
            if vec: synthetic_vectors(env)
            r.pop('watch_vector_s', None); r.update(watch_figures(folder, env, a.saves, vec))
        stamp, was = dict(at=time.strftime('%Y-%m-%d %H:%M'), load=round(os.getloadavg()[0], 1), commit=_commit()), r.get('measured', {})
        r['measured'] = {**was, **{ph: stamp for ph in phases}, 'first_index': stamp if 'process' in phases and fresh else was.get('first_index', was.get('process'))}
        results.setdefault('sizes', {})[size] = r
        a.out.write_text(json.dumps(results, indent=1), encoding='utf-8')
        print(f"  {json.dumps(r)}", file=sys.stderr, flush=True)
    if not a.no_vectors:
        results['vectors_1m'], results['vectors_1m_process'] = vsearch_figures(a.corpus, a.chroma_url)
        results['vectors_1m_measured'] = dict(at=time.strftime('%Y-%m-%d %H:%M'), load=round(os.getloadavg()[0], 1), commit=_commit())
        a.out.write_text(json.dumps(results, indent=1), encoding='utf-8')
    report(results)

def _commit() -> str:
    "The commit measured (+ when the tree has changes)."
    out = lambda *a: subprocess.run(['git', '-C', str(ROOT), *a], capture_output=True, text=True, encoding='utf-8').stdout.strip()
    return out('rev-parse', '--short', 'HEAD') + ('+' if out('status', '--porcelain', '--untracked-files=no') else '')

def timed_out(args, env) -> str:
    return subprocess.run([QMD, *args], env=env, capture_output=True, text=True, encoding='utf-8', check=True).stdout

def report(results:dict):
    "The figures as a table, with the goals where the issue sets them."
    rows = [('first index (s)', 'first_index_s'), ('  its CPU time (s)', 'first_index_cpu_s'), ('update, nothing changed (s)', 'update_nochange_s'), ('  its CPU time (s)', 'update_nochange_cpu_s'),
            ('update, one file changed (s)', 'update_one_s'), ('  its CPU time (s)', 'update_one_cpu_s'),
            ('search process start to exit (s)', 'search_process_s'), ('  its CPU time (s)', 'search_process_cpu_s'), ('search process peak RSS (MiB)', 'search_peak_mib'),
            ('in-process keyword p50 (ms)', 'keyword_p50_ms'), ('  its CPU time (ms)', 'keyword_p50_cpu_ms'), ('watch: save to keyword-searchable (s)', 'watch_keyword_s'),
            ('watch: save to vector-searchable (s)', 'watch_vector_s')]
    sizes = results.get('sizes', {})
    print(f"{'figure':40s}" + ''.join(f"{s + ' (' + str(sizes[s].get('documents', '')) + ')':>16s}" for s in sizes) + '   goal 14k / 100k')
    for label, k in rows:
        g = '  ' + ' / '.join(str(GOALS[s].get(k, '-')) for s in ('14k', '100k'))
        print(f"{label:40s}" + ''.join(f"{sizes[s].get(k, float('nan')):16.3f}" for s in sizes) + g)
    for s, r in sizes.items():
        if (e := r.get('equal_to_full')):
            print(f"{s}: after the one-file updates ({e['segments']} segments), keyword top 10 identical to the index built whole for"
                  f" {e['identical']}/{e['queries']} queries ({e['hits']} hits); that whole keyword build took {e['keyword_full_build_s']:.2f} s")
    for where, r in results.get('vectors_1m', {}).items():
        for name, x in r.items():
            print(f"vsearch 1M chunks, {where:8s} {name:15s} p50 {x['p50']:7.1f} ms (CPU {x.get('cpu_p50', float('nan')):5.1f})  p95 {x['p95']:7.1f} ms  first {x['first']:8.1f} ms"
                  f"   goal {GOALS['1M']['vsearch_' + where + '_p50_ms']} ms")
    for where, x in results.get('vectors_1m_process', {}).items():
        print(f"vsearch 1M chunks, {where:8s} `qmd-nb vsearch` process {x['cli_process_s']:.2f} s, peak {x['cli_peak_mib']:.0f} MiB;"
              f" the loop's process peak {x['loop_peak_mib']:.0f} MiB" + (f"; the Chroma server {x['server_rss_mib']:.0f} MiB" if 'server_rss_mib' in x else ''))
        if 'cli_small_process_s' in x: print(f"vsearch 1M chunks, {where:8s} `qmd-nb vsearch -c small` (10%) process {x['cli_small_process_s']:.2f} s, {x['cli_small_cpu_s']:.2f} s CPU")

if __name__ == '__main__': main()
