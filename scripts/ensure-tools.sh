#!/usr/bin/env bash
# Installs the command-line tools the tests run (the README's curl commands) when they are missing
# (needs root, as on CI). A test needing a missing tool fails; it does not skip.
set -u
missing=()
for tool in curl; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} for the tests" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
for tool in "${missing[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool is missing: apt-get install $tool" >&2; exit 1; }
done
