"""Faults: kill -9 at random moments during `update`, `embed` and ingestion (background jobs of a server), N times each,
then check the index the way a user would find it after running the command again, and that no process of the killed
run (its read pool's or converter's workers) outlives it.

Usage: python bench/bench_faults.py [--runs 20] [--seed 0] [--home DIR]

Prints, per case: runs, integrity-check failures, lost documents (a file or committed job whose document is missing after
the rerun), duplicated documents (more rows than files, a source ingested twice, more vectors than chunks), orphans
(content rows no document uses, vectors of contents no longer indexed), and for ingestion the jobs whose state was not
the truth (done without its document, or failed with it). Goal: 0 of each.
"""
import argparse, hashlib, json, os, random, shutil, signal, socket, sqlite3, subprocess, sys, tempfile, time
from pathlib import Path
import httpx

QMD = str(Path(sys.executable).parent/'qmd-nb')

def qmd(env, *args, check=True):
    r = subprocess.run([QMD, *map(str, args)], env=env, capture_output=True, text=True, encoding='utf-8', timeout=1800)
    if check and r.returncode: raise RuntimeError(f"qmd-nb {' '.join(map(str, args))}: {r.stderr[-1000:]}")
    return r

def killed(env, args, rng, started, extra:float) -> bool:
    "Run `qmd-nb ARGS`; SIGKILL it at a random moment: a quarter of the time early (0.2-2 s in), else once `started()` says its\n    writing began, plus up to `extra` seconds. Whether it was still running when killed."
    p = subprocess.Popen([QMD, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if rng.random() < 0.25: time.sleep(rng.uniform(0.2, 2.0))
    else:
        while p.poll() is None and not started(): time.sleep(0.01)
        time.sleep(rng.uniform(0, extra))
    if p.poll() is not None: return False
    kids = children(p.pid)
    p.send_signal(signal.SIGKILL); p.wait()
    end = time.time() + 10 # its worker processes (the read pool, the converter) must die with it
    while time.time() < end and any(map(alive, kids)): time.sleep(0.05)
    LEFT_BEHIND.extend(k for k in kids if alive(k))
    return True

LEFT_BEHIND = [] # processes of killed runs still alive 10 s after their parent was killed

def children(pid:int) -> list[int]:
    try: return [int(x) for x in Path(f'/proc/{pid}/task/{pid}/children').read_text(encoding='utf-8').split()]
    except OSError: return []

def alive(pid:int) -> bool:
    try: return Path(f'/proc/{pid}/stat').read_text(encoding='utf-8', errors='replace').split(') ')[1][0] not in 'ZX'
    except OSError: return False

def count(home:Path, sql:str) -> int:
    try:
        with sqlite3.connect(home/'cache'/'index'/'catalog.sqlite', timeout=1) as db: return db.execute(sql).fetchone()[0]
    except sqlite3.Error: return -1

def catalog(home:Path) -> sqlite3.Connection: return sqlite3.connect(home/'cache'/'index'/'catalog.sqlite')

def integrity(db) -> bool: return db.execute('PRAGMA integrity_check').fetchone()[0] == 'ok'

def orphans(db) -> int: return db.execute("SELECT COUNT(*) FROM content WHERE hash NOT IN (SELECT hash FROM documents)").fetchone()[0]

def note(i:int, v:int) -> str:
    words = 'alpha beta gamma delta epsilon zeta eta theta iota kappa'.split()
    return f"# Note {i}\n\nversion {v} " + ' '.join(words[(i * v + k) % 10] for k in range(200)) + f"\nunique{i}v{v}\n"

def case_update(root:Path, env, home:Path, runs:int, rng) -> dict:
    "Change, add and delete files, start `update`, kill it at a random moment, update again: the catalog must match the folder."
    folder = root/'notes'; folder.mkdir()
    for i in range(3000): (folder/f'n{i}.md').write_text(note(i, 0), encoding='utf-8')
    qmd(env, 'collection', 'add', folder, '--name', 'notes')
    t = time.time(); qmd(env, 'update'); base = max(1.0, time.time() - t) # (nothing to do: the cost of looking)
    out = dict(runs=runs, integrity=0, lost=0, duplicated=0, orphans=0, killed=0)
    for run in range(runs):
        for i in rng.sample(range(3000), 600): (folder/f'n{i}.md').write_text(note(i, run + 1), encoding='utf-8') # changed
        for i in rng.sample(range(3000, 3400), 40): (folder/f'n{i}.md').write_text(note(i, run + 1), encoding='utf-8') # new
        for p in rng.sample(sorted(folder.glob('n3*.md')), 10): p.unlink() # gone
        g = count(home, "SELECT value FROM kv WHERE key='generation'")
        out['killed'] += killed(env, ['update'], rng, lambda: count(home, "SELECT value FROM kv WHERE key='generation'") != g, base / 3)
        db = catalog(home); out['integrity'] += not integrity(db); db.close()
        qmd(env, 'update') # what the user does next
        db = catalog(home)
        files = {p.name for p in folder.glob('*.md')}
        rows = dict(db.execute("SELECT path, hash FROM documents WHERE collection='notes'").fetchall())
        n_rows = db.execute("SELECT COUNT(*) FROM documents WHERE collection='notes'").fetchone()[0]
        out['lost'] += len(files - set(rows)); out['duplicated'] += n_rows - len(rows) + len(set(rows) - files)
        out['lost'] += sum(1 for f in files & set(rows) if hashlib.sha256((folder/f).read_bytes()).hexdigest() != rows[f]) # not the file's content
        out['orphans'] += orphans(db); out['integrity'] += not integrity(db); db.close()
    return out

def vector_state(home:Path, env) -> tuple[int, int, int]:
    "(documents without vectors, vector rows beyond the chunks recorded, vectors of contents no longer indexed)."
    code = ("import sys, json, collections; from qmd_nb.engine.store import Store; from qmd_nb.engine.vectors import VectorStore; from qmd_nb.engine.embed import get_embedder\n"
            "st = Store(env={'QMD_NB_HOME': sys.argv[1]}); fp = get_embedder(st.config.settings).fingerprint\n"
            "metas = VectorStore(st, fp).col.get(include=['metadatas'])['metadatas']\n"
            "have = collections.Counter(m['hash'] for m in metas)\n"
            "emb = dict(st.q('SELECT hash, chunks FROM embedded WHERE fingerprint=?', (fp,)))\n"
            "docs = {h for (h,) in st.q('SELECT DISTINCT hash FROM documents')}\n"
            "missing = sum(1 for h in docs if h not in emb or have[h] != emb[h])\n"
            "extra = sum(max(0, have[h] - emb.get(h, 0)) for h in have if h in docs)\n"
            "stray = sum(n for h, n in have.items() if h not in docs)\n"
            "print(json.dumps([missing, extra, stray]))")
    r = subprocess.run([sys.executable, '-c', code, str(home)], env=env, capture_output=True, text=True, encoding='utf-8', timeout=600)
    if r.returncode: raise RuntimeError(r.stderr[-2000:])
    return tuple(json.loads(r.stdout.strip().splitlines()[-1]))

def case_embed(root:Path, env, home:Path, runs:int, rng) -> dict:
    "Change some files, update, start `embed`, kill it at a random moment, embed again: every document has its vectors, once."
    folder = root/'docs'; folder.mkdir()
    for i in range(300): (folder/f'd{i}.md').write_text(note(i, 0), encoding='utf-8')
    qmd(env, 'collection', 'add', folder, '--name', 'docs'); qmd(env, 'embed')
    for i in range(100): (folder/f'd{i}.md').write_text(note(i, -1), encoding='utf-8')
    qmd(env, 'update'); t = time.time(); qmd(env, 'embed'); base = time.time() - t # what one run's embed takes, whole (model load included)
    out = dict(runs=runs, integrity=0, lost=0, duplicated=0, orphans=0, killed=0)
    for run in range(runs):
        for i in rng.sample(range(300), 100): (folder/f'd{i}.md').write_text(note(i, run + 1), encoding='utf-8')
        qmd(env, 'update')
        n = count(home, "SELECT COUNT(*) FROM embedded")
        out['killed'] += killed(env, ['embed'], rng, lambda: count(home, "SELECT COUNT(*) FROM embedded") != n, base / 3)
        db = catalog(home); out['integrity'] += not integrity(db); db.close()
        qmd(env, 'embed')
        missing, extra, stray = vector_state(home, env)
        db = catalog(home)
        out['lost'] += missing; out['duplicated'] += extra; out['orphans'] += stray + orphans(db); out['integrity'] += not integrity(db); db.close()
    return out

def serve(env, folder:Path):
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]
    p = subprocess.Popen([QMD, 'serve', '--port', str(port), '--no-auth', '--allow-path', str(folder)], env=env, # loopback, no tokens: the bench is the owner
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url, t = f'http://127.0.0.1:{port}', time.time()
    while time.time() - t < 120:
        try:
            if httpx.get(url + '/health', timeout=2).status_code == 200: return p, url
        except httpx.TransportError: time.sleep(0.1)
    raise RuntimeError('server did not start')

def case_ingest(root:Path, env, home:Path, runs:int, rng) -> dict:
    "A server ingesting files as background jobs, killed at a random moment; then the jobs' states, the catalog after an update, and a retry."
    src = root/'inbox'; src.mkdir()
    out = dict(runs=runs, integrity=0, lost=0, duplicated=0, orphans=0, killed=0, untrue_jobs=0, jobs_done_at_the_kill=0, jobs_interrupted=0)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.ingest import job_status
    for run in range(runs):
        files = []
        for i in range(12):
            f = src/f'r{run}-{i}.md'; f.write_text(note(1000 * run + i, run) * rng.randint(1, 30), encoding='utf-8'); files.append(f)
        p, url = serve(env, src)
        with httpx.Client(base_url=url, timeout=30) as c:
            jobs = {c.post('/ingest', json={'source': str(f), 'library': f'lib{run % 3}', 'background': True}).json()['id']: f for f in files}
            time.sleep(rng.uniform(0.0, 2.0))
        p.send_signal(signal.SIGKILL); p.wait(); out['killed'] += 1
        db = catalog(home); out['integrity'] += not integrity(db)
        st = Store(env={'QMD_NB_HOME': str(home)})
        for jid, f in jobs.items():
            j = job_status(st, jid)
            there = db.execute("SELECT COUNT(*) FROM ingested i JOIN documents d ON d.collection = i.library AND d.path = i.path AND d.hash = i.hash "
                               "WHERE i.source = ?", (str(f),)).fetchone()[0] > 0
            out['untrue_jobs'] += (j.state == 'done') != there or j.state == 'processing'
            out['jobs_done_at_the_kill'] += j.state == 'done'; out['jobs_interrupted'] += j.state == 'failed'
        st.close(); db.close()
        qmd(env, 'update')
        for f in files: qmd(env, 'ingest', f, '--library', f'lib{run % 3}') # the retry a user makes: skipped or indexed, once
        db = catalog(home)
        for f in files:
            n = db.execute("SELECT COUNT(*) FROM ingested i JOIN documents d ON d.collection = i.library AND d.path = i.path WHERE i.source = ?", (str(f),)).fetchone()[0]
            out['lost'] += n == 0; out['duplicated'] += max(0, n - 1)
        lib_docs = db.execute("SELECT COUNT(*) FROM documents WHERE collection LIKE 'lib%'").fetchone()[0]
        out['duplicated'] += max(0, lib_docs - db.execute("SELECT COUNT(*) FROM ingested").fetchone()[0])
        out['orphans'] += orphans(db); out['integrity'] += not integrity(db); db.close()
    return out

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--runs', type=int, default=20); ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--home', help='working folder (default: a temporary one, removed at the end)')
    ap.add_argument('--cases', default='update,embed,ingest')
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = Path(a.home or tempfile.mkdtemp(prefix='qmd-nb-faults-')); work.mkdir(parents=True, exist_ok=True)
    try:
        for case in a.cases.split(','):
            home = work/case/'home'; home.mkdir(parents=True)
            env, t = {**os.environ, 'QMD_NB_HOME': str(home), 'HF_HUB_OFFLINE': '1'}, time.time()
            r = dict(update=case_update, embed=case_embed, ingest=case_ingest)[case](work/case, env, home, a.runs, rng)
            print(f"{case:7s} runs {r.pop('runs')}, killed mid-way {r.pop('killed')}, integrity-check failures {r.pop('integrity')}, "
                  f"lost {r.pop('lost')}, duplicated {r.pop('duplicated')}, orphans {r.pop('orphans')}"
                  + ''.join(f", {k.replace('_', ' ')} {v}" for k, v in r.items()) + f", processes left behind {len(LEFT_BEHIND)}  ({time.time() - t:.0f} s)", flush=True)
            LEFT_BEHIND.clear()
    finally:
        if not a.home: shutil.rmtree(work, ignore_errors=True)

if __name__ == '__main__': main()
