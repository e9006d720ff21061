#!/usr/bin/env bash
# tests/support/check_layers.sh [SOURCE_DIR] - the arrows between the production libraries point down
# only (docs/architecture.md §3): every `#include "X"` of a library's sources names a header of that
# library or of one it may depend on. Prints one line per upward include (file:line, the header,
# its library, what the file's library may include) and exits 1; exits 0 when there is none.
set -uo pipefail
root="${1:-$(dirname "$0")/../..}"
cd "$root" || exit 2

# library folder -> the library folders its sources may include (besides its own)
declare -A may=(
  [graph]=""
  [kernels]=""
  [models]="graph"
  [planner]="graph kernels"
  [reports]="planner graph kernels"
  [executor]="planner graph kernels"
  [executor/data]="planner graph kernels"
  [executor/metrics]="graph"
  [executor/io]="executor planner graph kernels"
  [executor/train]="executor/io executor/data executor/metrics executor planner graph kernels"
)

# The library a file belongs to: the longest folder in the table that holds it.
lib_of() {
  local d
  d="$(dirname "$1")"
  while [ "$d" != "." ]; do
    [ -n "${may[$d]+x}" ] && { echo "$d"; return; }
    d="$(dirname "$d")"
  done
  echo ""
}

declare -A home=() # header base name -> its library
while IFS= read -r h; do
  l="$(lib_of "$h")"
  [ -n "$l" ] && home[$(basename "$h")]="$l"
done < <(find graph kernels models planner reports executor -name '*.h' -type f)

bad=0
while IFS= read -r f; do
  l="$(lib_of "$f")"
  [ -n "$l" ] || continue
  while IFS=: read -r line hdr; do
    h="${home[$hdr]:-}"
    [ -z "$h" ] || [ "$h" = "$l" ] && continue
    case " ${may[$l]} " in *" $h "*) continue ;; esac
    echo "$f:$line: includes $hdr of $h/; $l/ may include only ${may[$l]:-nothing else}"
    bad=1
  done < <(grep -no '^#include "[^"]*"' "$f" | sed 's/#include "\(.*\)"/\1/')
done < <(find graph kernels models planner reports executor -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \))
[ "$bad" -eq 0 ] && echo "check_layers: every include points down"
exit "$bad"
