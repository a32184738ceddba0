#!/usr/bin/env bash
# Behaviour identity of graph_rewrite between a base revision and the working tree: for each rule
# set and generator seed below, `examples/prof_rewrite golden` prints per graph the stop reason,
# the rewritten graph and every trace step (rule, source, structural fingerprints of before/after);
# the two engines agree iff the outputs are byte-identical. An engine change (speed work, a file
# split) must leave all 8 configurations (15,000 graphs) identical.
#   usage: scripts/rewrite-identity.sh [BASE_REV]   (default: HEAD, i.e. uncommitted changes)
# Exit status: 0 identical, 1 some configuration differs (its first differing lines are shown),
# 2 a build failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
base=${1:-HEAD}
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/base" >/dev/null 2>&1; rm -rf "$work"' EXIT
git -C "$root" worktree add --detach "$work/base" "$base" >/dev/null 2>&1 ||
  { echo "rewrite-identity: cannot check out $base" >&2; exit 2; }
# the base builds in its own tree, linked against the same Z3 (`.deps`, see scripts/setup.sh)
ln -s "$root/.deps" "$work/base/.deps"
build() { (cd "$1" && cargo build --release --example prof_rewrite 2>&1 | tail -1); }
build "$work/base" >/dev/null && [ -x "$work/base/target/release/examples/prof_rewrite" ] ||
  { echo "rewrite-identity: building $base failed" >&2; exit 2; }
build "$root" >/dev/null && [ -x "$root/target/release/examples/prof_rewrite" ] ||
  { echo "rewrite-identity: building the working tree failed" >&2; exit 2; }
configs=("symbolic grammar 2000 0" "sym grammar 2000 0" "symbolic grammar 2000 1" "sym grammar 2000 1"
  "symbolic grammar 2000 2" "sym grammar 2000 2" "symbolic builtin 2000 0" "late grammar 1000 3")
status=0
for c in "${configs[@]}"; do
  # shellcheck disable=SC2086 # the config is four words on purpose
  "$work/base/target/release/examples/prof_rewrite" golden $c >"$work/a" 2>&1
  # shellcheck disable=SC2086
  "$root/target/release/examples/prof_rewrite" golden $c >"$work/b" 2>&1
  if cmp -s "$work/a" "$work/b"; then
    echo "same      $c"
  else
    echo "DIFFERENT $c"
    diff "$work/a" "$work/b" | head -8
    status=1
  fi
done
exit $status
