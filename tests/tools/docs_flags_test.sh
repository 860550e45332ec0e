#!/usr/bin/env bash
# Every flag that `deepcee --help` and `deepcee SUB --help` list appears in docs/commands.md,
# in that command's section, and an unknown subcommand says so in one line with exit code 2.
#   docs_flags_test.sh PATH/TO/deepcee PATH/TO/docs/commands.md
set -u
deepcee=$1
doc=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
[[ -f $doc ]] || { echo "FAIL: no $doc"; exit 1; }

# The subcommands, from the top-level help (CLI11 lists them under "Subcommands:").
subs=$("$deepcee" --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
[[ -n $subs ]] || fail "no subcommands found in deepcee --help"
# The page's text about a command: its "## `deepcee SUB`" section, up to the next "## "
# heading; the top level's: the "## Global flags" section.
section() {
  if [[ -z $1 ]]; then
    awk '/^## Global flags/ {on = 1; next} on && /^## / {exit} on' "$doc"
  else
    awk -v h="## \`deepcee $1\`" '/^## / {if (on) exit; on = ($0 == h)} on' "$doc"
  fi
}
checked=0
for sub in "" $subs; do
  help=$("$deepcee" $sub --help) || { fail "deepcee $sub --help"; continue; }
  text=$(section "$sub")
  [[ -n $text ]] || { fail "$doc has no section for deepcee ${sub:-(top level)}"; continue; }
  for flag in $(printf '%s\n' "$help" | sed -n '/^Options:/,/^Subcommands:/p' |
                grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
    [[ $flag == --help ]] && continue
    checked=$((checked + 1))
    printf '%s\n' "$text" | grep -q -- "$flag\b" ||
      fail "deepcee ${sub:-(top level)}: $flag is not in its section of $doc"
  done
done
[[ $checked -gt 20 ]] || fail "only $checked flags found in the help texts"

err=$("$deepcee" frobnicate 2>&1 >/dev/null)
rc=$?
[[ $rc == 2 ]] || fail "unknown subcommand: exit code $rc, expected 2"
[[ $(printf '%s\n' "$err" | wc -l) == 1 ]] || fail "unknown subcommand: expected one line, got: $err"
[[ $err == *"unknown subcommand 'frobnicate'"* ]] || fail "unknown subcommand: '$err'"

[[ $failures == 0 ]] && echo "docs flags: $checked flags checked, all in $doc"
exit $((failures > 0))
