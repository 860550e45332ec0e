#!/usr/bin/env bash
# Every C++ and CUDA source in the repository is formatted by its .clang-format.
#   format_test.sh SOURCE_DIR
# Lists each file that clang-format would change, and fails when there is one.
set -u
cd "$1" || exit 2
command -v clang-format >/dev/null || { echo "format: clang-format is not installed (./setup.sh)"; exit 2; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' '*.cu' '*.cuh')
else
  files=$(find . -path ./build -prune -o \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) -print)
fi
unformatted=0
checked=0
for f in $files; do
  [[ -f $f ]] || continue
  checked=$((checked + 1))
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (clang-format -i $f)"
    unformatted=$((unformatted + 1))
  fi
done
[[ $checked -gt 100 ]] || { echo "format: only $checked files found under $1"; exit 1; }
echo "format: $checked files checked, $unformatted not formatted"
exit $((unformatted > 0))
