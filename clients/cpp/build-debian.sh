#!/usr/bin/env bash
# Builds the C++ kit and its example bots with Debian's packages only: the way the tests, CI and
# `make kits` build it (CMake finds Debian's gRPC through pkg-config's grpc++).
#
#   clients/cpp/build-debian.sh [OUT]        default OUT: build/kits/cpp (from the repository's top)
#
# Needs libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler cmake g++
# (scripts/system-deps.sh kits). The craits.v1 code is generated from proto/ at build time, never
# committed. OUT holds libcraits_bot.a, random_bot and heuristic_bot; a second run with the same
# sources does nothing (OUT/.sources holds their hash), and a changed source rebuilds only what
# it touches (CMake's own build folder).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/build/kits/cpp}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
sources="$( (cat "$root/proto/craits/v1/referee.proto" "$0"; find "$here" -name '*.cpp' -o -name '*.hpp' -o -name CMakeLists.txt | sort | xargs cat) | sha256sum | cut -c1-16)"
if [ -f "$out/.sources" ] && [ "$(cat "$out/.sources")" = "$sources" ]; then
  echo "c++ kit: up to date in $out"
  exit 0
fi
missing=()
for tool in cmake g++ protoc grpc_cpp_plugin pkg-config; do command -v "$tool" >/dev/null || missing+=("$tool"); done
pkg-config --exists grpc++ 2>/dev/null || missing+=("grpc++ (libgrpc++-dev)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "c++ kit: missing ${missing[*]}; install Debian's packages with: sudo bash scripts/system-deps.sh kits" >&2
  exit 1
fi
rm -f "$out/.sources"
# -O1: the bots think little; the generated code compiles about twice as fast as at -O2
cmake -S "$here" -B "$out" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" >/dev/null
cmake --build "$out" -j "$(nproc 2>/dev/null || echo 2)" -- --no-print-directory >/dev/null
cat > "$out/cxx-bot" <<'SH'
#!/bin/sh
# Compiles your bot with the kit and Debian's gRPC, beside its source: cxx-bot mybot/my_bot.cpp
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -eq 1 ] || { echo "usage: cxx-bot FILE.cpp (the program goes beside it, without .cpp)" >&2; exit 2; }
exec g++ -std=c++17 -O1 -o "${1%.cpp}" "$1" -I"$here/include" -I"$here/gen" "$here/libcraits_bot.a" \
  $(pkg-config --cflags --libs grpc++ protobuf) -pthread
SH
chmod 755 "$out/cxx-bot"
rm -rf "$out/include" && cp -R "$here/include" "$out/include"
chmod -R a+rX "$out"
echo "$sources" > "$out/.sources"
echo "c++ kit: built $out"
