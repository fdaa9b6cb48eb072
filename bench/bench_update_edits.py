"""Many single-page edits of winserver-ps, each brought in as the watcher does (`update_paths`): the time of each update.

    .venv/bin/python bench/bench_update_edits.py [--edits 5000]

Copies ../shared/data/winserver-ps/docset (14,134 pages) to a temporary folder, indexes it, then appends a line to one
page at a time and updates that path. The keyword index takes each change as a small segment and merges segments by size
(four of one size class into one), so most updates are quick and a few pay for a merge: the median, the 90th percentile,
the slowest (with the segment sizes after it) and the total are printed. Timings are printed, never asserted.
"""
from __future__ import annotations
import argparse, shutil, statistics, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from qmd_nb.engine.store import Store
from qmd_nb.engine.index import add_collection, update_paths
from qmd_nb.engine.keyword import load_commit

DOCSET = ROOT/'..'/'shared'/'data'/'winserver-ps'/'docset'

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--edits', type=int, default=5000, help='single-page edits, one update each')
    ap.add_argument('--slow', type=float, default=0.8, help='print every update slower than this many seconds')
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix='qmd-nb-edits-'))
    try:
        shutil.copytree(DOCSET, tmp/'docs')
        st = Store(env={'QMD_NB_HOME': str(tmp/'home')})
        t = time.perf_counter(); add_collection(st, tmp/'docs', name='ws', progress=False)
        files = sorted((tmp/'docs').rglob('*.md'))
        print(f'{len(files)} pages indexed in {time.perf_counter() - t:.1f} s; {a.edits} edits, one update each', flush=True)
        ts = []
        for i in range(a.edits):
            f = files[(i * 7919) % len(files)] # a prime stride: edits spread over the whole set
            f.write_text(f.read_text(encoding='utf-8') + f'\nedit {i}\n', encoding='utf-8')
            t = time.perf_counter(); update_paths(st, 'ws', [str(f)]); ts.append(time.perf_counter() - t)
            if ts[-1] > a.slow:
                print(f'  edit {i}: {ts[-1]:.2f} s; segments (live documents) after it: {[s["live"] for s in load_commit(st.paths.keyword_dir)["segments"]]}', flush=True)
        s = sorted(ts)
        print(f'{a.edits} updates: median {statistics.median(s) * 1000:.0f} ms, p90 {s[int(len(s) * 0.9)] * 1000:.0f} ms, '
              f'slowest {s[-1]:.2f} s, total {sum(s):.1f} s')
    finally: shutil.rmtree(tmp, ignore_errors=True)

if __name__ == '__main__': main()
