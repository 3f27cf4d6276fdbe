#!/bin/sh
# A stand-in for the suite's CLI in tests: `server --url U (--suite S |
# --scenario X) [-o DIR]`. FAKE_SCENARIOS names the suite's scenarios,
# FAKE_FAIL one that fails, FAKE_HANG one that never finishes.
shift
url=; suite=; one=; dir=
while [ $# -gt 0 ]; do
  case "$1" in
    --url) url=$2; shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    --scenario) one=$2; shift 2 ;;
    -o) dir=$2; shift 2 ;;
    *) shift ;;
  esac
done
run() {
  echo "=== Running scenario: $1 ==="
  if [ "$1" = "$FAKE_HANG" ]; then exec sleep 60; fi
  status=SUCCESS
  if [ "$1" = "$FAKE_FAIL" ]; then status=FAILURE; fi
  if [ -n "$dir" ]; then
    d="$dir/server-$1-2026-12-02T03-07-32-930Z"
    mkdir -p "$d"
    printf '[{"id":"%s","name":"Check","description":"d","status":"%s","errorMessage":"boom","details":{"k":1}}]' "$1" "$status" > "$d/checks.json"
  fi
}
if [ -n "$one" ]; then run "$one"; exit 0; fi
set -- ${FAKE_SCENARIOS:-alpha beta gamma}
echo "Running $suite suite ($# scenarios) against $url"
for n; do run "$n"; done
