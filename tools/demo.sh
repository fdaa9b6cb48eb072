#!/usr/bin/env bash
# Set up, index the example notes that ship with qmd-nb into a demo index under .demo/, and search them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export QMD_NB_HOME="$PWD/.demo" HF_HUB_OFFLINE=1
Q=.venv/bin/qmd-nb
$Q collection list | grep -q '^notes' || $Q collection add examples/notes --name notes
$Q context add qmd://notes/meetings "Meeting notes of the home-lab team" >/dev/null
$Q update
echo; echo '$ qmd-nb search "restore drill"'; $Q search "restore drill" -n 3
echo; echo '$ qmd-nb get notes/guides/backups.md:10 -l 5 --line-numbers'; $Q get notes/guides/backups.md:10 -l 5 --line-numbers
echo; $Q status
