#!/usr/bin/env bash
# Create .venv and install qmd-nb with its development tools (nbdev, pytest, JupyterLab) and optional models (mpnet, and
# the LLM of query expansion=llm). About 5 GB and 8-10 minutes the first time (torch, OpenVINO, Chroma, JupyterLab, the
# 1.1 GB LLM, and llama-cpp-python, which pip builds from source: about 4 minutes, then kept in pip's cache); pip shows what it fetches. Safe to run again: when .venv is
# installed and pyproject.toml has not changed since, it checks and stops.
# torch is pinned in the same pip command so pip picks the local CPU build instead of pulling CUDA packages.
# For the docs test (tests/test_docs_site.py) it also fetches, when missing: Debian's chromium (apt-get; never
# `playwright install`) and the widget renderer's JavaScript (tools/widget_js.sh, from npm into a cache folder).
# Those two are best effort: without them everything else works and the docs test says what is missing.
# Afterwards `source .venv/bin/activate` puts `qmd-nb` (and `jupyter`, `nbdev-*`) on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "setup.sh: $*" >&2; }
stamp=.venv/.qmd-nb-installed
if [ ! -x .venv/bin/python ]; then say "creating .venv (Python: $(python3 --version 2>&1))"; python3 -m venv .venv; fi
if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ] && .venv/bin/python -c "import qmd_nb, bm25s, Stemmer, nbdev, jupyterlab" 2>/dev/null; then
  say ".venv is installed and up to date"
else
  say "installing qmd-nb and its dependencies into .venv: about 5 GB and 8-10 minutes the first time (llama-cpp-python builds from source)"
  start=$SECONDS
  free_gb=$(df -Pk . | awk 'NR == 2 {print int($4 / 1048576)}')
  if [ "${free_gb:-0}" -lt 8 ]; then say "warning: only ${free_gb} GB free here; the install needs about 5 GB, and the tests about 3 GB more"; fi
  # pip's own lines (Collecting..., Downloading... with sizes) are the progress, and its silent unpacking is announced;
  # a warning about a missing local package index in this machine's pip configuration is dropped. PYTHONUNBUFFERED: into
  # a pipe pip's lines would otherwise come in 8 KB bursts, and the announcement only after the unpacking it announces
  PYTHONUNBUFFERED=1 .venv/bin/pip install --disable-pip-version-check "torch==2.13.0" -e ".[dev]" --config-settings editable_mode=compat 2>&1 \
    | awk '/^WARNING: Location/ {next} {print; fflush()}
           /^Installing collected packages/ {print "setup.sh: pip now unpacks them into .venv: a minute or two without output"; fflush()}' \
    || { rc=${PIPESTATUS[0]}; say "pip failed (exit $rc): its error is above; $(df -Ph . | awk 'NR == 2 {print $4}') free on this disk"; exit "$rc"; }
  .venv/bin/python -c "import qmd_nb, bm25s, Stemmer, nbdev, jupyterlab" # fail loudly if the install did not work
  touch "$stamp"
  say "installed in $((SECONDS - start)) s; .venv holds $(du -sh .venv 2>/dev/null | cut -f1)"
fi

if ! command -v chromium >/dev/null && [ -z "${QMD_NB_NO_BROWSER:-}" ]; then
  if command -v apt-get >/dev/null && { [ "$(id -u)" = 0 ] || sudo -n true 2>/dev/null; }; then
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    say "installing chromium with apt-get (for the rendered-docs test)"
    log=$(mktemp)
    if ! { $SUDO apt-get install -y -q chromium >"$log" 2>&1 || { $SUDO apt-get update -q >>"$log" 2>&1 && $SUDO apt-get install -y -q chromium >>"$log" 2>&1; }; }; then
      say "could not install chromium with apt-get; the docs test will fail (QMD_NB_NO_BROWSER=1 skips it). apt-get said:"
      { grep -E '^(E|W|Err):' "$log" || tail -n 5 "$log"; } | tail -n 8 | sed 's/^/  /' >&2
    fi
    rm -f "$log"
  else
    say "chromium is missing and cannot be installed with apt-get here; the docs test will fail (QMD_NB_NO_BROWSER=1 skips it)"
  fi
fi
bash tools/widget_js.sh >/dev/null || say "no widget JavaScript; rendered docs will not show widgets"
command -v qmd-nb >/dev/null 2>&1 || say "done. Put qmd-nb on PATH in this shell: source .venv/bin/activate"
