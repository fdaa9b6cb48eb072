"""HTTP figures (issue: MCP server and REST API), measured on this machine against a real `qmd-nb serve --transport http`.

Usage: python bench/bench_http.py [--home DIR] [--requests 2000] [--clients 16] [--auth-only] [--case all|latency|load|mixed] [--seconds 60] [--load-clients 32]

On tldr-pages (indexed and embedded once into --home, default /tmp/qmd-nb-bench-http, reused on later runs) prints:
REST /search p50, MCP `search` tool call over Streamable HTTP p50 (the SDK's client), warm hybrid /query and MCP `query`
p50 (distinct queries, so the result cache does not answer; after the server's background warm-up of
the reranker's sentence-window vectors, which the script waits for), and N concurrent clients sending mixed search/get requests
(errors, p50, p99, requests/s), plus the server's peak memory. Every request sends the server's default token; the
cost of that is measured side by side first: the same REST /search and /get requests, interleaved, against a second
server on the same index started with --no-auth (goal: at most 0.5 ms more at p50). --auth-only measures just that
(no embedding, no warm-up wait).

Two timed cases (issue 14): `load`, --load-clients (32) clients sending mixed search/get requests for --seconds (60), with
the server's memory at the start, every sixth of the run, and the end (warm-up, or growth?); `mixed`, the same clients searching while another process adds and removes a
collection (tldr's linux pages) again and again: errors, p50, p99, requests/s and the writer's cycles.
"""
import argparse, asyncio, contextlib, json, os, random, socket, statistics, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import httpx

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent/'shared'/'data'
QMD = str(Path(sys.executable).parent/'qmd-nb')
sys.path.insert(0, str(ROOT/'bench'))

def pct(xs, p): xs = sorted(xs); return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

def setup(home:str, env:dict, embed:bool=True):
    st = json.loads(subprocess.run([QMD, 'status', '--json'], env=env, capture_output=True, text=True, check=True, encoding='utf-8').stdout)
    if not st['collections']:
        subprocess.run([QMD, 'collection', 'add', str(DATA/'tldr-pages'), '--name', 'tldr'], env=env, check=True, capture_output=True)
    if not embed: return
    t = time.time(); r = subprocess.run([QMD, 'embed'], env=env, check=True, capture_output=True, text=True, encoding='utf-8')
    print(f"setup: {r.stdout.strip()} ({time.time() - t:.0f} s)", flush=True)

def start(env, *args, model=True):
    "A server (with the default token unless --no-auth is in args): (process, URL, headers to send)."
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]
    p = subprocess.Popen([QMD, 'serve', '--transport', 'http', '--port', str(port), *args], env=env, stderr=subprocess.DEVNULL)
    url = f'http://127.0.0.1:{port}'
    while True:
        try:
            h = httpx.get(url + '/health').json()
            if h.get('model_loaded') or not model: break
        except httpx.TransportError: pass
        time.sleep(0.1)
    if '--no-auth' in args: return p, url, {}
    return p, url, {'Authorization': f"Bearer {(Path(env['QMD_NB_HOME'])/'config'/'token').read_text(encoding='utf-8').strip()}"}

def auth_overhead(a:tuple, b:tuple, path:str, bodies:list, warm:int=30) -> dict:
    "p50 of the same requests to two servers (a: with its token, b: --no-auth), interleaved so both see the same machine load."
    lat = {0: [], 1: []}
    with httpx.Client(base_url=a[0], headers=a[1], timeout=60) as ca, httpx.Client(base_url=b[0], timeout=60) as cb:
        for i, body in enumerate(bodies):
            for k in ((0, 1) if i % 2 else (1, 0)):
                c = ca if k == 0 else cb
                t = time.perf_counter(); r = c.post(path, json=body); dt = (time.perf_counter() - t) * 1000; r.raise_for_status()
                if i >= warm: lat[k].append(dt)
    return dict(auth=statistics.median(lat[0]), open=statistics.median(lat[1]), n=len(lat[0]))

def wait_warm(home:str, timeout:float=1800) -> float:
    "Wait until the server's background warm-up has stored window vectors for every document; seconds waited."
    import sqlite3
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.embed import get_embedder
    from qmd_nb.engine.hybrid import QueryParams
    from qmd_nb.engine.rerank import window_fp
    st = Store(env={'QMD_NB_HOME': home}); p = QueryParams.from_settings(st.config.settings)
    fp = window_fp(get_embedder(st.config.settings, {**os.environ, 'QMD_NB_HOME': home}), p.rerank_window, p.title_words) # this model's windows only
    db = sqlite3.connect(st.paths.db); t = time.time()
    while time.time() - t < timeout:
        docs = db.execute("SELECT COUNT(DISTINCT hash) FROM documents").fetchone()[0]
        have = db.execute("SELECT COUNT(*) FROM windows WHERE fingerprint=?", (fp,)).fetchone()[0] if db.execute("SELECT 1 FROM sqlite_master WHERE name='windows'").fetchone() else 0
        if have >= docs: return time.time() - t
        time.sleep(2)
    raise TimeoutError("reranker warm-up did not finish")

def queries():
    from known_item import sample
    return [q for _, q in sample(300, 0)]

def rest_p50(url, path, bodies, warm=20, headers=None):
    with httpx.Client(base_url=url, timeout=60, headers=headers) as c:
        for b in bodies[:warm]: c.post(path, json=b).raise_for_status()
        lat = []
        for b in bodies[warm:]:
            t = time.perf_counter(); r = c.post(path, json=b); lat.append((time.perf_counter() - t) * 1000); r.raise_for_status()
    return statistics.median(lat), pct(lat, 99)

async def mcp_p50(url, tool, args_list, warm=20, headers=None):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    async with Client(streamable_http_client(url + '/mcp', http_client=create_mcp_http_client(headers=headers))) as c:
        for a in args_list[:warm]: await c.call_tool(tool, a)
        lat = []
        for a in args_list[warm:]:
            t = time.perf_counter(); r = await c.call_tool(tool, a); lat.append((time.perf_counter() - t) * 1000)
            assert not r.is_error, r.content
    return statistics.median(lat), pct(lat, 99)

def concurrent_load(url, qs, files, n_requests, n_clients, headers=None):
    "n_clients threads, each with its own connection, sharing n_requests mixed requests (70% search, 30% get)."
    rng = random.Random(0)
    jobs = [('/search', {'query': rng.choice(qs), 'limit': 10}) if rng.random() < 0.7 else ('/get', {'file': rng.choice(files), 'max_lines': 50})
            for _ in range(n_requests)]
    shards = [jobs[i::n_clients] for i in range(n_clients)]
    def client(shard):
        lat, errors = [], 0
        with httpx.Client(base_url=url, timeout=60, headers=headers) as c:
            for path, body in shard:
                t = time.perf_counter()
                try: ok = c.post(path, json=body).status_code == 200
                except httpx.HTTPError: ok = False
                lat.append((time.perf_counter() - t) * 1000); errors += not ok
        return lat, errors
    t = time.time()
    with ThreadPoolExecutor(n_clients) as ex: res = list(ex.map(client, shards))
    wall = time.time() - t
    lat = [x for l, _ in res for x in l]
    return dict(requests=len(lat), errors=sum(e for _, e in res), p50_ms=statistics.median(lat), p99_ms=pct(lat, 99), rps=len(lat) / wall)

def timed_load(url, hdr, qs, files, seconds:float, n_clients:int, gets:float=0.3) -> dict:
    "n_clients threads, each with its own connection, sending random search (and `gets` share of get) requests for `seconds`."
    end, samples = time.time() + seconds, []
    def client(k):
        rng, lat, errors = random.Random(k), [], 0
        with httpx.Client(base_url=url, timeout=60, headers=hdr) as c:
            while time.time() < end:
                path, body = ('/get', {'file': rng.choice(files), 'max_lines': 50}) if rng.random() < gets else ('/search', {'query': rng.choice(qs), 'limit': 10})
                t = time.perf_counter()
                try: r = c.post(path, json=body); ok = r.status_code == 200
                except httpx.HTTPError as e: ok, r = False, e
                lat.append((time.perf_counter() - t) * 1000)
                if not ok:
                    errors += 1
                    if len(samples) < 5: samples.append(f"{path}: {getattr(r, 'status_code', '')} {getattr(r, 'text', r)!s:.200}")
        return lat, errors
    t = time.time()
    with ThreadPoolExecutor(n_clients) as ex: res = list(ex.map(client, range(n_clients)))
    wall = time.time() - t
    lat = [x for l, _ in res for x in l]
    return dict(requests=len(lat), errors=sum(e for _, e in res), p50_ms=statistics.median(lat), p99_ms=pct(lat, 99),
                max_ms=max(lat), rps=len(lat) / wall, samples=samples)

def churn(env, folder, stop) -> dict:
    "Another process adding (a folder inside the served collection: --force) and removing a collection until `stop` is set: cycles done, failures."
    out = dict(cycles=0, failures=[])
    while not stop.is_set():
        for args in (['collection', 'add', str(folder), '--name', 'churn', '--force'], ['collection', 'remove', 'churn']):
            r = subprocess.run([QMD, *args], env=env, capture_output=True, text=True, encoding='utf-8')
            if r.returncode: out['failures'].append(r.stderr[-300:])
        out['cycles'] += 1
    return out

def rss_mib(pid):
    for line in Path(f'/proc/{pid}/status').read_text(encoding='utf-8').splitlines():
        if line.startswith('VmRSS'): return int(line.split()[1]) / 1024

@contextlib.contextmanager
def sampled(pid, every:float):
    "The server's memory (MiB) every `every` seconds while the block runs: whether it levels off or keeps growing."
    import threading
    seen, stop = [], threading.Event()
    def watch():
        while not stop.wait(every): seen.append(rss_mib(pid))
    th = threading.Thread(target=watch, daemon=True); th.start()
    try: yield seen
    finally: stop.set(); th.join()

def report(name, load):
    print(f"{name}: {load['requests']} requests, {load['errors']} errors, p50 {load['p50_ms']:.1f} ms, p99 {load['p99_ms']:.1f} ms, "
          f"max {load['max_ms']:.0f} ms, {load['rps']:.0f} requests/s" + ''.join(f"\n  error: {s}" for s in load['samples']), flush=True)

def timed_cases(p, url, hdr, env, qs, files, a):
    if a.case in ('all', 'load'):
        rss0 = rss_mib(p.pid)
        with sampled(p.pid, a.seconds / 6) as seen: load = timed_load(url, hdr, qs, files, a.seconds, a.load_clients)
        rss1 = rss_mib(p.pid)
        report(f"{a.load_clients} clients for {a.seconds:g} s, mixed search/get", load)
        print(f"  server memory {rss0:.0f} MiB at the start, {rss1:.0f} MiB at the end ({rss1 - rss0:+.0f} MiB); "
              f"every {a.seconds / 6:g} s: {' '.join(f'{m:.0f}' for m in seen)} MiB", flush=True)
    if a.case in ('all', 'mixed'):
        import threading
        stop, box = threading.Event(), {}
        w = threading.Thread(target=lambda: box.update(churn(env, DATA/'tldr-pages'/'linux', stop))); w.start()
        try:
            rss0 = rss_mib(p.pid); load = timed_load(url, hdr, qs, files, a.seconds, a.load_clients, gets=0.0); rss1 = rss_mib(p.pid)
        finally: stop.set(); w.join()
        report(f"{a.load_clients} clients searching for {a.seconds:g} s while another process adds and removes a collection", load)
        print(f"  writer: {box['cycles']} add/remove cycles, {len(box['failures'])} failures{' ' + box['failures'][0] if box['failures'] else ''}; "
              f"server memory {rss0:.0f} -> {rss1:.0f} MiB", flush=True)

def peak_mib(pid):
    for line in Path(f'/proc/{pid}/status').read_text(encoding='utf-8').splitlines():
        if line.startswith('VmHWM'): return int(line.split()[1]) / 1024

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--home', default='/tmp/qmd-nb-bench-http'); ap.add_argument('--requests', type=int, default=2000)
    ap.add_argument('--clients', type=int, default=16)
    ap.add_argument('--auth-only', action='store_true', help='only the cost of authentication (no embedding, no warm-up)')
    ap.add_argument('--case', choices=('all', 'latency', 'load', 'mixed'), default='all', help='latency: the p50s and the request-count load')
    ap.add_argument('--seconds', type=float, default=60); ap.add_argument('--load-clients', type=int, default=32)
    a = ap.parse_args()
    env = {**os.environ, 'QMD_NB_HOME': a.home, 'HF_HUB_OFFLINE': '1'}
    setup(a.home, env, embed=not a.auth_only)
    p, url, hdr = start(env)
    p2, url2, _ = start(env, '--no-auth') # the same index, no tokens: for the side-by-side cost of authentication
    try:
        qs = queries()
        files = [r['file'] for q in qs[:40] for r in httpx.post(url + '/search', json={'query': q, 'limit': 3}, headers=hdr).json()['results']]
        if a.case in ('load', 'mixed'): return timed_cases(p, url, hdr, env, qs, files, a)
        if not a.auth_only: print(f"reranker warm-up (sentence windows of every document, kept in the catalog): waited {wait_warm(a.home):.0f} s", flush=True)
        for path, bodies in (('/search', [{'query': q, 'limit': 10} for q in qs] * 3), ('/get', [{'file': f, 'max_lines': 50} for f in files] * 6)):
            o = auth_overhead((url, hdr), (url2, {}), path, bodies)
            print(f"auth cost REST {path:7s} p50 with token {o['auth']:6.2f} ms, --no-auth {o['open']:6.2f} ms: "
                  f"{o['auth'] - o['open']:+.2f} ms (goal <= 0.5 ms; {o['n']} interleaved requests each)", flush=True)
        from qmd_nb.engine.auth import TokenStore, token_dir
        ts, tok = TokenStore(token_dir(env)), hdr['Authorization'][7:]
        n = 20000; t = time.perf_counter()
        for _ in range(n): ts.verify(tok)
        print(f"token check in process (the file's stat, a sha256, a constant-time compare): {(time.perf_counter() - t) / n * 1e6:.1f} us", flush=True)
        if a.auth_only: return
        out = {}
        out['rest_search'] = rest_p50(url, '/search', [{'query': q, 'limit': 10} for q in qs], headers=hdr)
        out['mcp_http_search'] = asyncio.run(mcp_p50(url, 'search', [{'query': q, 'limit': 10} for q in qs], headers=hdr))
        out['rest_get'] = rest_p50(url, '/get', [{'file': f, 'max_lines': 50} for f in files], headers=hdr)
        hq = [f'how do I {q}' for q in qs[:120]] # distinct from anything asked before: no cached answers
        out['rest_query'] = rest_p50(url, '/query', [{'query': q, 'limit': 10} for q in hq[:60]], warm=10, headers=hdr)
        out['mcp_http_query'] = asyncio.run(mcp_p50(url, 'query', [{'query': q, 'limit': 10} for q in hq[60:]], warm=10, headers=hdr))
        for k, (p50, p99) in out.items(): print(f"{k:18s} p50 {p50:7.1f} ms   p99 {p99:7.1f} ms", flush=True)
        load = concurrent_load(url, qs, files, a.requests, a.clients, headers=hdr)
        print(f"{a.clients} concurrent clients, {load['requests']} mixed search/get requests: {load['errors']} errors, "
              f"p50 {load['p50_ms']:.1f} ms, p99 {load['p99_ms']:.1f} ms, {load['rps']:.0f} requests/s", flush=True)
        print(f"server peak memory {peak_mib(p.pid):.0f} MiB", flush=True)
        if a.case == 'all': timed_cases(p, url, hdr, env, qs, files, a)
    finally:
        for proc in (p, p2): proc.terminate(); proc.wait(30)

if __name__ == '__main__': main()
