#!/usr/bin/env bash
# Installs from Debian what craits needs beside Python, the one place that knows these packages:
#
#   scripts/system-deps.sh setup   bubblewrap: the sandbox launched bots run in (make setup)
#   scripts/system-deps.sh test    that, plus chromium and a font with card suit symbols for the
#                                  browser tests (no browser download from elsewhere) and
#                                  PostgreSQL's server binaries for the store and worker tests
#                                  (the tests start their own server in a temporary folder),
#                                  Caddy for the test that runs deploy/ (its Caddyfile in front
#                                  of two web processes), and what the kits need (below)
#   scripts/system-deps.sh kits    the Java and C++ bot kits' Debian build (`make kits`): a JDK,
#                                  grpc-java and its jars (netty, perfmark: libgrpc-java does not
#                                  pull them in; javax.annotation for the 1.41 plugin's code),
#                                  protoc with the Java and C++ gRPC plugins, gRPC C++ and cmake
#
# As root it installs what is missing with apt-get; otherwise it prints the one apt-get line
# that would. It never fails the make target that calls it: without bubblewrap `craits demo`
# plays its bundled bots unsandboxed (and says so), and the tests that need a missing package
# fail under CI or skip with this same hint. `craits doctor` tells what this machine has.
set -uo pipefail
what="${1:-setup}"
case "$what" in
  setup|test|kits) ;;
  *) echo "usage: $0 setup|test|kits" >&2; exit 2 ;;
esac
missing=()
# Debian's names of what the kits build with; a package counts as there when dpkg says installed.
KIT_PACKAGES=(openjdk-17-jdk-headless libgrpc-java libprotobuf-java libnetty-java libperfmark-java
              protobuf-compiler-grpc-java-plugin libgeronimo-annotation-1.3-spec-java
              libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler cmake g++ make pkg-config)
if [ "$what" = test ] || [ "$what" = kits ]; then
  for package in "${KIT_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$package")
    fi
  done
fi
if [ "$what" = kits ]; then
  :
elif ! command -v bwrap >/dev/null 2>&1; then
  missing+=(bubblewrap)
fi
if [ "$what" = test ]; then
  if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi dejavu; then
    missing+=(chromium fonts-dejavu-core fontconfig)
  fi
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
    missing+=(postgresql)
  fi
  if ! command -v caddy >/dev/null 2>&1; then
    missing+=(caddy)
  fi
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
line="apt-get install -y --no-install-recommends ${missing[*]}"
case "$what" in
  test) for_what="the tests" ;;
  kits) for_what="the Java and C++ kits" ;;
  *) for_what="the bot sandbox" ;;
esac
if ! command -v apt-get >/dev/null 2>&1; then
  echo "$what: missing ${missing[*]} for $for_what (Debian's package names; install them with this system's package manager)" >&2
  exit 0
fi
if [ "$(id -u)" != "0" ]; then
  echo "$what: missing ${missing[*]} for $for_what; install with: sudo $line" >&2
  exit 0
fi
echo "$what: installing Debian's ${missing[*]} for $for_what (one time)..." >&2
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/dev/null; then
  echo "$what: could not install ${missing[*]}; try: $line" >&2
fi
# Debian's caddy package starts a system-wide Caddy on port 80; the tests run their own.
if [[ " ${missing[*]} " == *" caddy "* ]] && command -v systemctl >/dev/null 2>&1 \
   && systemctl is-enabled caddy >/dev/null 2>&1; then
  systemctl disable --now caddy >/dev/null 2>&1 \
    && echo "$what: disabled the caddy service the package started (the tests start their own Caddy)" >&2
fi
exit 0
