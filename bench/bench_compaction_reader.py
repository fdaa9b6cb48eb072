"""A long-lived reader (a server, say) searching by HNSW while another process compacts the vectors: how often must it
open Chroma again, and how long do its searches stall?

Usage: python bench/bench_compaction_reader.py HOME [--page 1000]

HOME is an index that has vectors (QMD_NB_HOME; e.g. bench/bench_ranking.py's tldr one); it is copied to a temporary
folder first and left as it is. The reader searches by Chroma's HNSW index (`EXACT_MAX = 0`, as indexes past 50,000
chunks do, where opening Chroma again costs most) six queries in turn, 20 ms apart, while this process compacts the
copy in pages of `--page` vectors. Prints the compaction's time and pages, and the reader's searches meanwhile: how
many, p50, max, and how many times another process's turn made it open Chroma again."""
import argparse, shutil, subprocess, sys, tempfile, time
from pathlib import Path
CHILD = """import sys, time
from pathlib import Path
from qmd_nb.engine.store import Store
from qmd_nb.engine.embed import get_embedder
from qmd_nb.engine.chroma import _lock_fd, _turns
import qmd_nb.engine.vectors as V
V.EXACT_MAX = 0
st = Store(env={'QMD_NB_HOME': sys.argv[1]}); em = get_embedder(st.config.settings)
qs = ['extract a tar archive', 'show disk usage', 'kill a process', 'download a file', 'list files', 'compress a folder']
V.vsearch(st, em, 'warm up', limit=5); print('ready', flush=True)
lat, seen, reopens, stop = [], _turns(_lock_fd(st)), 0, Path(sys.argv[2])
while not stop.exists():
    for q in qs:
        n = _turns(_lock_fd(st)); reopens += n != seen; seen = n
        t = time.perf_counter(); hits = V.vsearch(st, em, q, limit=5); lat.append((time.perf_counter() - t) * 1000)
        assert hits, q
        time.sleep(0.02)
lat.sort(); print(f'{len(lat)} searches, p50 {lat[len(lat) // 2]:.1f} ms, max {lat[-1]:.1f} ms, {reopens} times opened again', flush=True)"""

def main():
    ap = argparse.ArgumentParser(); ap.add_argument('home'); ap.add_argument('--page', type=int, default=1000)
    a = ap.parse_args()
    from qmd_nb.engine.store import Store
    from qmd_nb.engine.embed import get_embedder
    from qmd_nb.engine.chroma import VectorStore
    from qmd_nb.engine.compact import compact
    with tempfile.TemporaryDirectory() as tmp:
        home, stop = Path(tmp)/'home', Path(tmp)/'stop'
        shutil.copytree(a.home, home)
        st = Store(env={'QMD_NB_HOME': str(home)}); vs = VectorStore(st, get_embedder(st.config.settings).fingerprint)
        n = vs.count()
        r = subprocess.Popen([sys.executable, '-c', CHILD, str(home), str(stop)], stdout=subprocess.PIPE, text=True, encoding='utf-8')
        assert r.stdout.readline().strip() == 'ready'
        time.sleep(1); t = time.time(); compact(vs, page=a.page, progress=False); took = time.time() - t
        time.sleep(1); stop.touch()
        print(f'compacted {n} vectors in {-(-n // a.page)} pages of {a.page}: {took:.1f} s')
        print(f'reader meanwhile (and 1 s either side): {r.communicate()[0].strip()}')

if __name__ == '__main__': main()
