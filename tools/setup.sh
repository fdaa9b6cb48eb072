#!/usr/bin/env bash
# Create .venv and install qmd-nb with its development tools. Safe to run again: it only installs what is missing.
# torch is pinned in the same pip command so pip picks the local CPU build instead of pulling CUDA packages.
# For the docs test (tests/test_docs_site.py) it also fetches, when missing: Debian's chromium (apt-get; never
# `playwright install`) and the widget renderer's JavaScript (tools/widget_js.sh, from npm into a cache folder).
# Those two are best effort: without them everything else works and the docs test says what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check "torch==2.13.0" -e ".[dev]" --config-settings editable_mode=compat 2>&1 \
  | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import qmd_nb, bm25s, Stemmer, nbdev" # fail loudly if the install did not work

if ! command -v chromium >/dev/null && [ -z "${QMD_NB_NO_BROWSER:-}" ]; then
  if command -v apt-get >/dev/null && { [ "$(id -u)" = 0 ] || sudo -n true 2>/dev/null; }; then
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    echo "setup.sh: installing chromium (for the rendered-docs test)" >&2
    { $SUDO apt-get install -y -q chromium >/dev/null 2>&1 || { $SUDO apt-get update -q >/dev/null 2>&1 && $SUDO apt-get install -y -q chromium >/dev/null 2>&1; }; } \
      || echo "setup.sh: could not install chromium with apt-get; the docs test will fail (QMD_NB_NO_BROWSER=1 skips it)" >&2
  else
    echo "setup.sh: chromium is missing and cannot be installed with apt-get here; the docs test will fail (QMD_NB_NO_BROWSER=1 skips it)" >&2
  fi
fi
bash tools/widget_js.sh >/dev/null || echo "setup.sh: no widget JavaScript; rendered docs will not show widgets" >&2
