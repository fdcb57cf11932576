#!/usr/bin/env bash
# Installs the npm packages of each directory given (its package-lock.json, with `npm ci`) when
# node_modules is missing or older than the lock file. The browser tests need tests/browser
# (axe-core); a JavaScript package adds its own directory to the ./dev call.
set -euo pipefail
for dir in "$@"; do
  lock="$dir/package-lock.json"
  stamp="$dir/node_modules/.package-lock.json"
  [ -f "$lock" ] || { echo "ensure-npm: $lock is missing" >&2; exit 1; }
  if [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ]; then
    command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js 20 or later" >&2; exit 1; }
    echo "installing the npm packages of $dir" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done
