#!/usr/bin/env bash
# Set up and run every test: notebooks clean and exported as committed, notebook tests, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS=0
trap 'echo "tools/test.sh: wall time $((SECONDS / 60))m$((SECONDS % 60))s"' EXIT
bash tools/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Converted models are kept between runs (converting or joining them again takes minutes); everything else a test writes
# to a temporary folder goes to one folder of this run, removed at the end: notebook tests leave their temporary indexes
# behind (about 700 folders, 400 MB a run), and a disk filled by earlier runs failed CI. It is world-traversable like /tmp,
# since some tests run a part as another user.
export QMD_NB_MODEL_CACHE="${QMD_NB_MODEL_CACHE:-${TMPDIR:-/tmp}/qmd-nb-test-models}"
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/qmd-nb-test-run.XXXXXX"); chmod 1777 "$run_tmp"
trap 'rm -rf --one-file-system "$run_tmp" 2>/dev/null; echo "tools/test.sh: wall time $((SECONDS / 60))m$((SECONDS % 60))s"' EXIT
export TMPDIR="$run_tmp"
B=.venv/bin
echo "== nbdev-clean and nbdev-export must leave git clean"
$B/nbdev-clean
$B/nbdev-export
if [ -n "$(git status --porcelain -- nbs qmd_nb)" ]; then
  git status --porcelain -- nbs qmd_nb
  echo "FAIL: notebooks are not clean or qmd_nb/ differs from what the notebooks export" >&2
  exit 1
fi
echo "== README.md is nbs/index.ipynb; nbs/sidebar.yml lists every notebook; nbdev-docs runs every notebook as nbdev-test does"
$B/python tools/readme.py --check
$B/python tools/render_docs.py --check-sidebar
$B/python tools/check_docs_exec.py --run
echo "== every text file opened with an explicit encoding (a model load switches the locale to ASCII for a moment)"
$B/python tools/lint_encoding.py qmd_nb tests bench tools
echo "== the package's shape: module and function sizes, no private name imported across modules, no SQL outside qmd_nb/engine/"
$B/python tools/check_shape.py
echo "== nbdev-test"
$B/nbdev-test
echo "== pytest"
$B/python -m pytest -q tests "$@"
