#!/usr/bin/env bash
# Installs what the browser tests need: Debian's chromium and a font with card suit symbols (no browser download from elsewhere).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && fc-list 2>/dev/null | grep -qi dejavu; then
  exit 0
fi
if [ "$(id -u)" != "0" ]; then
  echo "test-deps: chromium is missing; install it with: sudo apt-get install -y chromium" >&2
  exit 0  # the browser tests will fail with this same hint
fi
echo "test-deps: installing Debian's chromium for the browser tests (one time)..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core fontconfig >/dev/null
