#!/usr/bin/env bash
# Checks every finding of a fuzz run twice: `uopfuzz replay` (the interpreter shows it again) and
# its repro.py under real tinygrad 0.14.0 (tinygrad's own graph_rewrite + exec_alu show it).
# Prints one TSV line per finding and a count per outcome; the 1-hour acceptance run of the
# oracle issue was checked with it.
#   usage: scripts/check-findings.sh FINDINGS_DIR [CLASS_PREFIX]   (default prefix: rewrite-bug)
set -uo pipefail
dir=${1:?usage: scripts/check-findings.sh FINDINGS_DIR [CLASS_PREFIX]}
prefix=${2:-rewrite-bug}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${UOPFUZZ:-$root/target/release/uopfuzz}
py=$root/.venv/bin/python
[ -x "$bin" ] || { echo "check-findings: no $bin (cargo build --release)" >&2; exit 2; }
[ -x "$py" ] || { echo "check-findings: no $py (bash scripts/setup.sh)" >&2; exit 2; }
[ -d "$dir" ] || { echo "check-findings: $dir: not a directory" >&2; exit 2; }
printf 'finding\tinterp\ttinygrad\ttinygrad_says\n'
for f in "$dir"/"$prefix"*/; do
  f=${f%/}
  [ -f "$f/repro.py" ] || { printf '%s\tno-repro\t-\t-\n' "$(basename "$f")"; continue; }
  "$bin" replay "$f/repro.py" >/dev/null 2>&1
  case $? in 1) ir=reproduces ;; 0) ir=NOT-REPRODUCED ;; *) ir=error ;; esac
  out=$(cd "$f" && timeout 120 "$py" repro.py 2>&1)
  last=$(printf '%s\n' "$out" | grep -E "^(reproduces|tinygrad does not|cannot check|note:)" | tr '\n' ' ' | cut -c1-200)
  case "$last" in
    reproduces*) tg=reproduces ;;
    *"undefined behaviour on C-like"*) tg=hard-ub-not-showable ;;
    "tinygrad does not"*) tg=NOT-REPRODUCED ;;
    *) tg=cannot-check ;;
  esac
  printf '%s\t%s\t%s\t%s\n' "$(basename "$f")" "$ir" "$tg" "$last"
done | tee /tmp/check-findings.$$ 
echo "--- interp:";   cut -f2 /tmp/check-findings.$$ | sort | uniq -c
echo "--- tinygrad:"; cut -f3 /tmp/check-findings.$$ | sort | uniq -c
rm -f /tmp/check-findings.$$
