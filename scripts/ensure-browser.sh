#!/usr/bin/env bash
# Installs Debian's Chromium for the browser tests when it is missing (needs root, as on CI).
set -u
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium for the browser tests" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
command -v chromium >/dev/null 2>&1 || { echo "chromium is missing: apt-get install chromium" >&2; exit 1; }
