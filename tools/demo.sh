#!/usr/bin/env bash
# Set up, index and embed the example notes that ship with qmd-nb into a demo index under .demo/, and search them
# (keyword, then hybrid). Serving them to an agent is then `QMD_NB_HOME=.demo .venv/bin/qmd-nb mcp`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export QMD_NB_HOME="$PWD/.demo" HF_HUB_OFFLINE=1
Q=.venv/bin/qmd-nb
$Q collection list | grep -q '^notes' || $Q collection add examples/notes --name notes
$Q context add qmd://notes/meetings "Meeting notes of the home-lab team" >/dev/null
$Q update
echo; echo '$ qmd-nb search "restore drill"'; $Q search "restore drill" -n 3
echo; echo '$ qmd-nb embed'; $Q embed 2>/dev/null
echo; echo '$ qmd-nb query "how do we make sure backups can be restored" -n 3'; $Q query "how do we make sure backups can be restored" -n 3
echo; echo '$ qmd-nb get notes/guides/backups.md:10 -l 5 --line-numbers'; $Q get notes/guides/backups.md:10 -l 5 --line-numbers
echo; $Q status
echo; echo "Serve these notes to an agent over MCP (stdio): QMD_NB_HOME=$QMD_NB_HOME .venv/bin/qmd-nb mcp"
