#!/usr/bin/env bash
# Builds the JavaScript this checkout serves and tests, after installing each project's npm packages
# from its lock file (scripts/ensure-npm.sh), when a source is newer than the last build:
#   serve  control_plane/demo: the /demo page's bundle and the client's browser file (/js/shopsearch.js)
#   test   that, and clients/js (the client's package build and its tests' packages)
# Without npm, `serve` warns and goes on (the API works; /demo says how to build it); `test` fails.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-test}
projects=(control_plane/demo)
if [ "$mode" = test ]; then projects+=(clients/js); fi

if ! command -v npm >/dev/null 2>&1; then
  echo "npm is missing: install Node.js 20 or later (it builds the demo page and the JavaScript client)" >&2
  [ "$mode" = serve ] && exit 0
  exit 1
fi
scripts/ensure-npm.sh "${projects[@]}"

for dir in "${projects[@]}"; do
  built="$dir/node_modules/.built"
  changed=$(find "$dir" clients/js/src \( -name node_modules -o -name build -o -name dist \) -prune -o \
            -type f -newer "$built" -print -quit 2>/dev/null || true)
  if [ ! -f "$built" ] || [ -n "$changed" ]; then
    echo "building $dir" >&2
    (cd "$dir" && npm run --silent build) && touch "$built"
  fi
done
