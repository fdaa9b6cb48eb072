"""A growing log under `qmd-nb watch`: a text file of --mb MB gets a line every 50 ms for --seconds; prints the watcher's
CPU seconds over that time, how many times it indexed the file, and how long its last line took to become searchable
once the writes stopped. The hot-file rule (`watch.HotFiles`) indexes a file that keeps changing at most every
HOT_FILE_SECONDS, or less often when indexing it is slow (HOT_FILE_SHARE of the time, HOT_FILE_MAX_SECONDS at most).

Usage: python bench/bench_growing_log.py [--mb 20] [--seconds 60] [--pythonpath DIR]
(--pythonpath runs the watcher from another checkout, e.g. a `git worktree` of an older commit, for a side-by-side run.)
"""
import argparse, os, random, subprocess, sys, tempfile, time
from pathlib import Path

QMD = str(Path(sys.executable).parent/'qmd-nb')
WORDS = 'error warning info request user disk memory network timeout retry connect socket'.split()

def make_log(path:Path, mb:int):
    "A log of about `mb` MB of timestamped lines."
    rng, i = random.Random(1), 0
    with open(path, 'w', encoding='utf-8') as f:
        while f.tell() < mb << 20: f.write(f'2026-11-27 08:{i % 60:02d}:{i % 60:02d} ' + ' '.join(rng.choice(WORDS) for _ in range(12)) + f' id={i}\n'); i += 1

def cpu(pid:int) -> float:
    "User + system CPU seconds of a process so far."
    f = Path(f'/proc/{pid}/stat').read_text(encoding='utf-8').rsplit(')', 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')

def grow(log:Path, seconds:float):
    "Append a line every 50 ms for `seconds`, then a last one with a word of its own."
    end, i = time.time() + seconds, 0
    with open(log, 'a', encoding='utf-8') as f:
        while time.time() < end: f.write(f'appended line {i} zebra{i}\n'); f.flush(); i += 1; time.sleep(0.05)
        f.write('final line quokkafinal\n')

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--mb', type=int, default=20); ap.add_argument('--seconds', type=float, default=60); ap.add_argument('--pythonpath')
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        d = Path(d); (d/'n').mkdir(); make_log(d/'n'/'app.txt', a.mb)
        env = {**os.environ, 'QMD_NB_HOME': str(d/'h'), 'XDG_CONFIG_HOME': str(d/'c'), 'HF_HUB_OFFLINE': '1', **({'PYTHONPATH': a.pythonpath} if a.pythonpath else {})}
        subprocess.run([QMD, 'collection', 'add', str(d/'n'), '--name', 'n'], env=env, check=True, capture_output=True)
        out = open(d/'watch.out', 'w', encoding='utf-8')
        w = subprocess.Popen([QMD, 'watch', '--no-embed'], env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            time.sleep(8) # armed and caught up
            c0 = cpu(w.pid); grow(d/'n'/'app.txt', a.seconds); c1, t0 = cpu(w.pid), time.time()
            while 'quokkafinal' not in subprocess.run([QMD, 'search', 'quokkafinal', '--json'], env=env, capture_output=True, text=True, encoding='utf-8').stdout:
                time.sleep(0.2)
            lag = time.time() - t0
        finally: w.terminate(); w.wait(30); out.close()
        n = (d/'watch.out').read_text(encoding='utf-8').count('n: 0 indexed, 1 updated')
        print(f"a {a.mb} MB log growing for {a.seconds:.0f} s: watcher CPU {c1 - c0:.1f} s ({(c1 - c0) / a.seconds:.0%} of a core), "
              f"{n} indexings, last line searchable {lag:.1f} s after the writes stopped")

if __name__ == '__main__': main()
