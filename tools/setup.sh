#!/usr/bin/env bash
# Create .venv and install qmd-nb with its development tools. Safe to run again: it only installs what is missing.
# torch is pinned in the same pip command so pip picks the local CPU build instead of pulling CUDA packages.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check "torch==2.13.0" -e ".[dev]" --config-settings editable_mode=compat 2>&1 \
  | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import qmd_nb, bm25s, Stemmer, nbdev" # fail loudly if the install did not work
