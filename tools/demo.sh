#!/usr/bin/env bash
# Set up, index and embed the example notes that ship with qmd-nb into a demo index under .demo/, search them
# (keyword, then hybrid), then serve them: REST on http://127.0.0.1:18765 and MCP (Streamable HTTP) at /mcp, until Ctrl-C.
# Requests need a bearer token: the server makes the default one in .demo/config/token on first use. PORT=... picks another port.
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
PORT=${PORT:-18765}
echo; echo "MCP clients: 'QMD_NB_HOME=$QMD_NB_HOME .venv/bin/qmd-nb mcp-config --port $PORT' prints their configuration (the HTTP ones carry the token)."
echo "Serving on http://127.0.0.1:$PORT (Ctrl-C stops). Try, from another terminal (the token is made when the server starts):"
echo "  TOKEN=\$(cat $QMD_NB_HOME/config/token)"
echo "  curl -s -X POST http://127.0.0.1:$PORT/search -H \"Authorization: Bearer \$TOKEN\" -H 'Content-Type: application/json' -d '{\"query\": \"restore drill\", \"limit\": 3}'"
echo "  QMD_NB_HOME=$QMD_NB_HOME .venv/bin/qmd-nb query 'how do we make sure backups can be restored' --mode server --server http://127.0.0.1:$PORT   # sends the token itself"
echo "  QMD_NB_HOME=$QMD_NB_HOME .venv/bin/qmd-nb token create --scope read --collections notes --name demo   # a read-only token for one collection"
exec $Q serve --transport http --port "$PORT"
