"""Two long-lived readers of one index (a server and a notebook, say), each searching in a loop: does one's search make
the other open Chroma again?

Usage: python bench/bench_two_readers.py HOME [--hnsw] [--seconds 20]

HOME is an index that has vectors (QMD_NB_HOME; e.g. bench/bench_ranking.py's tldr one). Prints the p50 and p90 of
`vsearch` in process A alone, then while process B searches too (each process: six queries in turn, 50 ms apart, the
query-vector cache emptied so that each search embeds its query). --hnsw makes both search by Chroma's HNSW index
(`EXACT_MAX = 0`), as indexes past 50,000 chunks do, where opening Chroma again costs most."""
import argparse, subprocess, sys, time
CHILD = """import sys, time
from qmd_nb.engine.store import Store
from qmd_nb.engine.embed import get_embedder
import qmd_nb.engine.vectors as V
if sys.argv[3] == '1': V.EXACT_MAX = 0
st = Store(env={'QMD_NB_HOME': sys.argv[1]}); em = get_embedder(st.config.settings)
qs = ['extract a tar archive', 'show disk usage', 'kill a process', 'download a file', 'list files', 'compress a folder']
V.vsearch(st, em, 'warm up', limit=5)
lat, end = [], time.time() + float(sys.argv[2])
while time.time() < end:
    for q in qs:
        em.clear_cache(); t = time.perf_counter(); V.vsearch(st, em, q, limit=5); lat.append((time.perf_counter() - t) * 1000); time.sleep(0.05)
lat.sort(); print(f'{len(lat)} searches, p50 {lat[len(lat) // 2]:.1f} ms, p90 {lat[int(len(lat) * 0.9)]:.1f} ms')"""

def main():
    ap = argparse.ArgumentParser(); ap.add_argument('home'); ap.add_argument('--hnsw', action='store_true'); ap.add_argument('--seconds', type=float, default=20)
    a = ap.parse_args(); args = lambda s: [sys.executable, '-c', CHILD, a.home, str(s), '1' if a.hnsw else '0']
    alone = subprocess.run(args(a.seconds), capture_output=True, text=True, encoding='utf-8', check=True).stdout.strip()
    b = subprocess.Popen(args(a.seconds * 2), stdout=subprocess.PIPE, text=True, encoding='utf-8'); time.sleep(a.seconds / 2.5)
    both = subprocess.run(args(a.seconds), capture_output=True, text=True, encoding='utf-8', check=True).stdout.strip()
    print(f'A alone:            {alone}\nA while B searches: {both}\nB:                  {b.communicate()[0].strip()}')

if __name__ == '__main__': main()
