#!/usr/bin/env bash
# Formats the C++ sources with clang-format (Debian 12's, 14.0, installed through
# deploy/install-deps.sh) by the repository's .clang-format.
#   deploy/format.sh           rewrite every file that is not formatted
#   deploy/format.sh --check   write nothing; list the files that are not formatted, print the
#                              size of the change, exit 1 if there is any
# Files: every tracked *.cc, *.h and *.cc.in except the generated table headers
# (tables/include/blocktune/tables/*_tuned_block_sizes.h are written by `blocktune tables
# generate` and checked byte for byte by the tables_up_to_date test). The kernels' fingerprinted
# files (cmake/fingerprint.cmake) are included: reformatting one changes its kernel's fingerprint
# and makes that kernel's tuned rows stale, so they were held back until the issue-25 change that
# also moved ISA dispatch into kernels/core/isa_dispatch.h and was followed by a re-sweep.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: deploy/format.sh [--check]" >&2; exit 2 ;;
esac
command -v clang-format >/dev/null || deploy/install-deps.sh clang-format >/dev/null
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cc.in' |
  grep -v '^tables/include/blocktune/tables/.*_tuned_block_sizes\.h$' | sort -u)
unformatted=0
changed_lines=0
for f in "${files[@]}"; do
  # *.cc.in are C++ templates for configure_file: formatted as C++.
  if ! formatted=$(clang-format --style=file --assume-filename="${f%.in}" <"$f"); then
    echo "clang-format failed on $f" >&2; exit 2
  fi
  if [[ "$formatted" != "$(cat "$f")" ]]; then
    unformatted=$((unformatted + 1))
    n=$(diff <(printf '%s\n' "$formatted") "$f" | grep -c '^[<>]' || true)
    changed_lines=$((changed_lines + n))
    if ((check)); then
      echo "$f: $n lines differ"
    else
      printf '%s\n' "$formatted" >"$f"
    fi
  fi
done
if ((check)); then
  echo "$unformatted of ${#files[@]} files not formatted ($changed_lines lines differ)"
  ((unformatted == 0))
else
  echo "formatted $unformatted of ${#files[@]} files ($changed_lines lines changed)"
fi
