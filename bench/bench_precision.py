"""Does the bf16 fast path change ranking? SciFact vsearch nDCG@10 with f32 vectors, to set beside the default (bf16) run.

Usage: python bench/bench_precision.py [--home DIR]   (embeds SciFact once in f32: about 10 minutes here)
Compare with `qmd-nb eval ../shared/data/scifact --mode vsearch --json` (the default, bf16 where the CPU has it).
"""
import argparse, json, tempfile
from pathlib import Path
from qmd_nb.notebook.eval import evaluate
from qmd_nb.engine.embed import OpenVINOEmbedder

DATA = Path(__file__).resolve().parents[1].parent/'shared'/'data'

if __name__ == '__main__':
    ap = argparse.ArgumentParser(); ap.add_argument('--home', default=tempfile.mkdtemp(prefix='qmdnb-f32-')); a = ap.parse_args()
    emb = OpenVINOEmbedder(cache_dir=Path(a.home)/'models', precision='f32')
    print('f32 vsearch', json.dumps(evaluate(DATA/'scifact', 'vsearch', {'QMD_NB_HOME': a.home}, embedder=emb).to_json()))
