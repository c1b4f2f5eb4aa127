#!/usr/bin/env bash
# Makes a committed H200 record again from its own raw artifacts with this tree's code
# (`benchfleet record --from-store`), then checks it against them (`check --artifacts`).
#   bash tests/gpu/remake_record.sh docs/records/h200-moe-decode/run-N
# The run folder holds raw-artifacts.tar.gz (what the GPU machine sent back); the record's
# Markdown, JSON, plots and data/ are replaced, and check.txt says what check found.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
run=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar xzf "$run/raw-artifacts.tar.gz" -C "$work"
sweep=$(ls "$work/artifacts" | grep -v '^\.' | head -1)
export BENCHFLEET_ARTIFACTS="$work/artifacts"
cd "$work"
"$root/.venv/bin/benchfleet" record --from-store "$sweep" -o "$work/out" > "$work/made.txt" || true
rm -rf "$run/data" "$run/$sweep".* "$run/$sweep"-*.png
cp -r "$work/out/data" "$work/out/$sweep".md "$work/out/$sweep".json "$work/out/$sweep"-*.png \
  "$work/out/$sweep".png "$run/"
"$root/.venv/bin/benchfleet" check "$run/$sweep.json" --artifacts "$work/artifacts" \
  | sed "s|$work|<raw-artifacts.tar.gz>|g; s|$root/||g" > "$run/check.txt" || true
cat "$run/check.txt"
