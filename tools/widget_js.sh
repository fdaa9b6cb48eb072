#!/usr/bin/env bash
# Fetch the JavaScript that renders saved Jupyter widgets in static HTML pages, once, from the npm registry into a
# cache folder outside the repository (the rendered docs then work offline and reference these local copies):
#   ${QMD_NB_WIDGET_JS:-${XDG_CACHE_HOME:-$HOME/.cache}/qmd-nb/widget-js}/{html-manager,requirejs}
# @jupyter-widgets/html-manager 1.0.x is the renderer for ipywidgets 8 state; require.js loads its AMD bundle.
# Prints the folder. Exit 3 when npm is missing or the registry cannot be reached.
set -euo pipefail
HTML_MANAGER=${QMD_NB_HTML_MANAGER_VERSION:-1.0.15}
REQUIREJS=${QMD_NB_REQUIREJS_VERSION:-2.3.8}
DIR=${QMD_NB_WIDGET_JS:-${XDG_CACHE_HOME:-$HOME/.cache}/qmd-nb/widget-js}
stamp="$DIR/.versions"
want="html-manager@$HTML_MANAGER requirejs@$REQUIREJS"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$DIR/html-manager/embed-amd.js" ] && [ -f "$DIR/requirejs/require.js" ]; then
  echo "$DIR"; exit 0
fi
command -v npm >/dev/null || { echo "widget_js.sh: npm is needed to fetch the widget renderer" >&2; exit 3; }
mkdir -p "$DIR"
tmp=$(mktemp -d "$DIR/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "widget_js.sh: fetching @jupyter-widgets/html-manager@$HTML_MANAGER and requirejs@$REQUIREJS into $DIR" >&2
if ! (cd "$tmp" && npm pack --silent "@jupyter-widgets/html-manager@$HTML_MANAGER" "requirejs@$REQUIREJS" >/dev/null 2>&1); then
  echo "widget_js.sh: could not fetch the packages from the npm registry" >&2; exit 3
fi
mkdir -p "$tmp/hm" "$tmp/rq"
tar xzf "$tmp"/jupyter-widgets-html-manager-*.tgz -C "$tmp/hm"
tar xzf "$tmp"/requirejs-*.tgz -C "$tmp/rq"
rm -rf "$DIR/html-manager" "$DIR/requirejs"
mkdir -p "$DIR/html-manager" "$DIR/requirejs"
# the AMD bundle and the fonts it loads next to itself; no source maps
find "$tmp/hm/package/dist" -maxdepth 1 -type f ! -name '*.map' -exec cp {} "$DIR/html-manager/" \;
cp "$tmp/rq/package/require.js" "$DIR/requirejs/require.js"
cp "$tmp/hm/package/LICENSE" "$DIR/html-manager/LICENSE" 2>/dev/null || true
cp "$tmp/rq/package/LICENSE" "$DIR/requirejs/LICENSE" 2>/dev/null || true
echo "$want" > "$stamp"
echo "$DIR"
