#!/usr/bin/env bash
# Builds the Java kit with Debian's packages only (no Maven, no network): the way the tests, CI
# and `make kits` build it. A student at home may use pom.xml instead (Maven Central).
#
#   clients/java/build-debian.sh [OUT]        default OUT: build/kits/java (from the repository's top)
#
# Needs openjdk-17-jdk-headless libgrpc-java libprotobuf-java libnetty-java libperfmark-java
# protobuf-compiler protobuf-compiler-grpc-java-plugin libgeronimo-annotation-1.3-spec-java
# (scripts/system-deps.sh kits). The code for craits.v1 is generated from proto/ here, at build
# time, and never committed. OUT holds craits-bot.jar (the kit, the examples, the generated
# code), `classpath` (Debian's jars it runs with) and a launcher per example bot; a second run
# with the same sources does nothing (OUT/.sources holds their hash).
set -euo pipefail
if [ -d "$(dirname "$0")/proto" ]; then
  # a handout (craits handout --kit java): proto/, src/ and build/ beside this script, named from
  # here (a submission's build sandbox may not let it look at the folders above its own)
  self="$(basename "$0")"; [ "$(dirname "$0")" = . ] || cd "$(dirname "$0")"
  proto_root=proto; src=src; out="${1:-build}"
else  # the repository: clients/java/src/main/java, proto/ at the top
  self="$0"; here="$(cd "$(dirname "$0")" && pwd)"
  root="$(cd "$here/../.." && pwd)"
  proto_root="$root/proto"; src="$here/src/main/java"; out="${1:-$root/build/kits/java}"
  case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
fi
proto="$proto_root/craits/v1/referee.proto"
sources="$( (cat "$proto" "$self"; find "$src" -name '*.java' | sort | xargs cat) | sha256sum | cut -c1-16)"
if [ -f "$out/.sources" ] && [ "$(cat "$out/.sources")" = "$sources" ]; then
  echo "java kit: up to date in $out"
  exit 0
fi
missing=()
for tool in javac jar protoc; do command -v "$tool" >/dev/null || missing+=("$tool"); done
plugin="$(command -v grpc_java_plugin || command -v protoc-gen-grpc-java || true)"
[ -n "$plugin" ] || missing+=(grpc_java_plugin)
jars=(grpc-api grpc-core grpc-context grpc-stub grpc-protobuf grpc-protobuf-lite grpc-netty protobuf guava
      perfmark-api netty-buffer netty-codec netty-codec-http netty-codec-http2 netty-codec-socks
      netty-common netty-handler netty-handler-proxy netty-resolver netty-transport geronimo-annotation-1.3-spec)
classpath=""
for jar in "${jars[@]}"; do
  if [ -f "/usr/share/java/$jar.jar" ]; then
    classpath="$classpath${classpath:+:}/usr/share/java/$jar.jar"
  else
    missing+=("/usr/share/java/$jar.jar")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "java kit: missing ${missing[*]}; install Debian's packages with: sudo bash scripts/system-deps.sh kits" >&2
  exit 1
fi
# Built in a folder of /tmp, then copied: a submission's build sandbox shows its folder but not
# the ones above it, and javac and protoc name files by their absolute paths; they read copies.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/gen" "$work/classes" "$work/out"
cp -R "$src" "$work/src"
cp -R "$proto_root" "$work/proto"
src="$work/src"; proto_root="$work/proto"; proto="$proto_root/craits/v1/referee.proto"
protoc --proto_path="$proto_root" --java_out="$work/gen" --plugin=protoc-gen-grpc-java="$plugin" \
  --grpc-java_out="$work/gen" "$proto"
# -nowarn -XDsuppressNotes: the generated code's deprecations and sun.misc.Signal are known
# -J...: javac's own JVM sized for a build sandbox (1 GiB), started quickly
javac -J-Xmx512m -J-XX:+UseSerialGC -J-XX:TieredStopAtLevel=1 -J-XX:CompressedClassSpaceSize=128m \
  -nowarn -XDsuppressNotes --release 17 -encoding UTF-8 -cp "$classpath" -d "$work/classes" \
  $(find "$work/gen" "$src" -name '*.java') 2> >(grep -v 'internal proprietary API\|sun.misc.Signal\|^ *\^\|^[0-9]* warnings\?$' >&2)
jar --create --file "$work/out/craits-bot.jar" -C "$work/classes" .
echo "$classpath" > "$work/out/classpath"
# Start-up: -XX:TieredStopAtLevel=1 (the quick compiler only: a bot's work is small), the serial
# collector (fewer threads: the sandbox counts them), and heap, class space and code cache sized
# for a bot (the JVM's defaults reserve gigabytes of address space, over the sandbox's limit).
cat > "$work/out/java-bot" <<'SH'
#!/bin/sh
# Runs a Java bot class with the kit: java-bot CLASS [ARGS...] (CLASSPATH: more jars or folders)
here="$(dirname "$0")"
class="$1"; shift
exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xss1m -Xmx256m -XX:CompressedClassSpaceSize=64m \
  -XX:ReservedCodeCacheSize=32m -XX:MaxMetaspaceSize=128m -Xshare:auto $CRAITS_JAVA_OPTS \
  -cp "${CLASSPATH:+$CLASSPATH:}.:$here/craits-bot.jar:$(cat "$here/classpath")" "$class" "$@"
SH
cat > "$work/out/javac-bot" <<'SH'
#!/bin/sh
# Compiles your bot's .java files with the kit, into their folder: javac-bot mybot/MyBot.java [...]
here="$(dirname "$0")"
[ $# -gt 0 ] || { echo "usage: javac-bot FILE.java [FILE.java ...] (the classes go beside the first)" >&2; exit 2; }
exec javac -J-XX:TieredStopAtLevel=1 -J-XX:+UseSerialGC -cp "$here/craits-bot.jar:$(cat "$here/classpath")" \
  -d "$(dirname "$1")" "$@"
SH
for bot in random:RandomBot heuristic:HeuristicBot; do  # (the kit's examples, when they are there)
  [ -f "$src/craits/bot/examples/${bot#*:}.java" ] || continue
  printf '#!/bin/sh\nexec "$(dirname "$0")/java-bot" craits.bot.examples.%s "$@"\n' "${bot#*:}" > "$work/out/${bot%%:*}-bot"
done
chmod 755 "$work"/out/*-bot
chmod -R a+rX "$work/out"
echo "$sources" > "$work/out/.sources"
mkdir -p "$(dirname "$out")"
rm -rf "$out.new"
cp -R "$work/out" "$out.new"
rm -rf "$out"
mv "$out.new" "$out"
echo "java kit: built $out"
