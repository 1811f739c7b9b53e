#!/usr/bin/env bash
# Installs what the tests need from Debian: chromium and a font with card suit symbols for the
# browser tests (no browser download from elsewhere), bubblewrap for the bot sandbox.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && fc-list 2>/dev/null | grep -qi dejavu && command -v bwrap >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != "0" ]; then
  echo "test-deps: chromium or bubblewrap is missing; install them with: sudo apt-get install -y chromium bubblewrap" >&2
  exit 0  # the browser and sandbox tests will fail with this same hint
fi
echo "test-deps: installing Debian's chromium and bubblewrap for the browser and sandbox tests (one time)..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core fontconfig bubblewrap >/dev/null
