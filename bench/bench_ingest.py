"""Ingest figure: conversion + keyword index (no embedding) of 200 five-page PDFs and 200 Word files (goal <= 60 s).

Generates the files in a temp dir with fpdf2 and python-docx (not timed), then times, each on a fresh index:
  1. `qmd-nb collection add DIR --mask ...` as a whole process (conversions over a process pool);
  2. `ingest()` of every file one by one into a library, in one Python process (the `qmd-nb ingest` / MCP path),
     with the keyword index rebuilt once at the end;
  3. `qmd-nb update` with nothing changed, and after touching every file (same bytes: hashed, not converted).
Usage: python bench/bench_ingest.py [--pdfs 200] [--docx 200] [--pages 5]"""
import argparse, io, os, random, subprocess, sys, tempfile, time
from pathlib import Path

WORDS = ("storage backup restore network kernel memory process thread index search query cluster replica snapshot "
         "latency throughput budget quarter report migration schedule policy retention archive disk volume mirror").split()

def para(rng, n=60): return ' '.join(rng.choice(WORDS) for _ in range(n)).capitalize() + '.'

def make_pdf(rng, i, pages):
    from fpdf import FPDF
    pdf = FPDF(); pdf.set_title(f'Report {i}'); pdf.set_author(rng.choice(['Ana', 'Ben', 'Chloe']))
    for p in range(pages):
        pdf.add_page(); pdf.set_font('helvetica', 'B', 14); pdf.cell(0, 10, f'Section {p + 1}', new_x='LMARGIN', new_y='NEXT')
        pdf.set_font('helvetica', size=10)
        for _ in range(7): pdf.multi_cell(0, 5, para(rng)); pdf.ln(2)
    return bytes(pdf.output())

def make_docx(rng, i):
    import docx
    d = docx.Document(); d.core_properties.title = f'Memo {i}'; d.core_properties.author = rng.choice(['Ana', 'Ben'])
    d.add_heading(f'Memo {i}', 0)
    for s in range(4):
        d.add_heading(f'Part {s + 1}', 1)
        for _ in range(3): d.add_paragraph(para(rng))
        d.add_paragraph(para(rng, 8), style='List Bullet')
    b = io.BytesIO(); d.save(b); return b.getvalue()

def run(env, *args):
    t = time.perf_counter()
    r = subprocess.run([str(Path(sys.executable).parent/'qmd-nb'), *map(str, args)], env=env, capture_output=True, text=True, encoding='utf-8')
    if r.returncode: sys.exit(f"qmd-nb {' '.join(map(str, args))} failed: {r.stderr}")
    return time.perf_counter() - t, r

def main():
    ap = argparse.ArgumentParser(); ap.add_argument('--pdfs', type=int, default=200); ap.add_argument('--docx', type=int, default=200)
    ap.add_argument('--pages', type=int, default=5); a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix='qmd-nb-bench-ingest-')); src = tmp/'files'; src.mkdir()
    rng, t = random.Random(0), time.perf_counter()
    for i in range(a.pdfs): (src/f'report-{i:03d}.pdf').write_bytes(make_pdf(rng, i, a.pages))
    for i in range(a.docx): (src/f'memo-{i:03d}.docx').write_bytes(make_docx(rng, i))
    mb = sum(f.stat().st_size for f in src.iterdir()) / 2**20
    print(f"generated {a.pdfs} PDFs ({a.pages} pages each) and {a.docx} Word files, {mb:.1f} MiB, in {time.perf_counter() - t:.1f} s (not timed)")

    env = {**os.environ, 'QMD_NB_HOME': str(tmp/'home1')}
    secs, r = run(env, 'collection', 'add', src, '--name', 'bench', '--mask', '**/*.pdf,**/*.docx')
    n = a.pdfs + a.docx
    print(f"qmd-nb collection add (convert + keyword index, whole process): {secs:.1f} s, {n / secs:.0f} files/s  [goal <= 60 s]")
    s0, _ = run(env, 'update'); print(f"qmd-nb update, nothing changed: {s0:.2f} s")
    for f in src.iterdir(): os.utime(f, (time.time() + 60, time.time() + 60))
    s1, _ = run(env, 'update'); print(f"qmd-nb update, every file touched (same bytes): {s1:.2f} s")

    from qmd_nb.engine.store import Store
    from qmd_nb.engine.ingest import ingest
    from qmd_nb.engine.keyword import refresh
    st = Store(env={'QMD_NB_HOME': str(tmp/'home2')})
    t = time.perf_counter(); stats = {}
    for f in sorted(src.iterdir()):
        r = ingest(st, str(f), 'bench', reindex=False); stats[r.status] = stats.get(r.status, 0) + 1
    refresh(st)
    secs2 = time.perf_counter() - t
    print(f"ingest() one file at a time, in process (no pool), keyword index once: {secs2:.1f} s, {n / secs2:.0f} files/s {stats}")
    st.close()

if __name__ == '__main__': main()
