#!/usr/bin/env bash
# Installs what the tests need from Debian: chromium and a font with card suit symbols for the
# browser tests (no browser download from elsewhere), bubblewrap for the bot sandbox, and
# PostgreSQL's server binaries for the PostgreSQL store and worker tests (the tests start their
# own server in a temporary folder).
set -euo pipefail
missing=()
if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi dejavu; then
  missing+=(chromium fonts-dejavu-core fontconfig)
fi
if ! command -v bwrap >/dev/null 2>&1; then
  missing+=(bubblewrap)
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  missing+=(postgresql)
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != "0" ]; then
  echo "test-deps: missing ${missing[*]}; install with: sudo apt-get install -y ${missing[*]}" >&2
  exit 0  # the tests that need them fail (under CI) or skip with this same hint
fi
echo "test-deps: installing Debian's ${missing[*]} for the tests (one time)..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
