#!/bin/bash
# Fresh readers of a read-only index while another process writes it: how many fail?
#
# Usage (as root, for the bind mount): bash bench/bench_readonly_readers.sh [TRIALS] [CODE]
#
# A writer edits 40 of ~900 tldr pages and runs `update` and `embed` in a loop on an index; meanwhile TRIALS fresh
# processes open the same index through a read-only bind mount (so each takes a private copy of the vectors, as
# Chroma writes even to read) and run one `vsearch`. Prints every failure and "failures: N of TRIALS". CODE is the
# qmd-nb checkout to run (default: this one), to compare two versions side by side.
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd); N=${1:-60}; CODE=${2:-$HERE}
PY=$HERE/.venv/bin/python; export PYTHONPATH=$CODE HF_HUB_OFFLINE=1
T=$(mktemp -d); H=$T/home; RO=$T/ro; mkdir -p $T/docs $RO; trap 'touch $T/stop; wait; umount $RO 2>/dev/null; rm -rf $T' EXIT
Q() { "$PY" -c 'import sys; from qmd_nb.parser import main; sys.exit(main(sys.argv[1:]))' "$@"; }
cp "$HERE"/../shared/data/tldr-pages/common/[a-c]*.md $T/docs/
export QMD_NB_HOME=$H; Q collection add $T/docs --name d > /dev/null && Q embed > /dev/null 2>&1 || exit 1
mount --bind $H $RO && mount -o remount,bind,ro $RO || { echo "cannot make a read-only bind mount here (root needed)"; exit 2; }
( i=0; while [ ! -f $T/stop ]; do i=$((i+1))
    for f in $(ls $T/docs | shuf -n 40 --random-source=<(yes $i)); do echo "edit $i" >> $T/docs/$f; done
    Q update > /dev/null 2>&1; Q embed > /dev/null 2>&1; done ) &
fail=0
for t in $(seq $N); do
  out=$(QMD_NB_HOME=$RO "$PY" -c "
from qmd_nb.engine.store import Store
from qmd_nb.engine.embed import get_embedder
from qmd_nb.engine.vectors import vsearch
st = Store(env={'QMD_NB_HOME': '$RO'})
assert vsearch(st, get_embedder(st.config.settings), 'compress files into an archive', limit=3), 'no hits'; print('ok')" 2>&1 | tail -1)
  [ "$out" = ok ] || { fail=$((fail+1)); echo "trial $t: $out"; }
done
echo "failures: $fail of $N"
