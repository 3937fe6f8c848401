#!/bin/sh
# The parameter table of lib/params.c (tests/test-params --table) is what
# every list of parameters shows: each key, with its unit and default, in
# the PARAMETERS section of the plugin's, zonednull-server's and
# zonednull-ublk's man pages, in nbdkit's config_help, and in both
# programs' --help; and none of them lists a key the table lacks.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

builddir=${ZONEDNULL_BUILDDIR:-.}
srcdir=${ZONEDNULL_SRCDIR:-..}
"$builddir/tests/test-params" --table >"$tmpdir/table" ||
  fail "tests/test-params --table failed"
[ -s "$tmpdir/table" ] || fail "the parameter table is empty"
errors=0
complain () {
  echo "$0: $*" >&2
  errors=$((errors + 1))
}

# man_entries PAGE: "key unit body" a line for every tag of the list in
# the PARAMETERS section, the troff markup taken out.  Tags given
# together (.PD 0) share the paragraph that follows them.
man_entries () {
  awk '
    # The text of a line: a font macro'"'"'s arguments run together (the
    # alternating ones join without spaces), escapes taken out.
    function text(line,    macro, rest, n, i, a, out) {
      if (line !~ /^\./)
        out = line
      else {
        macro = line; sub(/[ \t].*/, "", macro)
        rest = line; sub(/^[^ \t]*[ \t]*/, "", rest)
        if (macro !~ /^\.(B|I|BI|BR|IB|IR|RB|RI|SM|SB)$/)
          return ""
        gsub(/"/, "", rest)
        n = split(rest, a, /[ \t]+/)
        out = ""
        for (i = 1; i <= n; i++)
          out = out (macro ~ /^\.(B|I|SM|SB)$/ && i > 1 ? " " : "") a[i]
      }
      gsub(/\\f[BIRP]/, "", out)
      gsub(/\\-/, "-", out)
      gsub(/\\&/, "", out)
      gsub(/\\ /, " ", out)
      return out
    }
    function flush(    i) {
      for (i = 1; i <= ntags; i++)
        print tags[i], body
      ntags = 0; body = ""
    }
    /^\.SH/ { if (inside) flush(); inside = ($0 ~ /^\.SH PARAMETERS/); next }
    !inside { next }
    /^\.TP/ { if (body != "") flush(); tag_next = 1; next }
    /^\.(PP|SS|IP|LP|P)( |$)/ { flush(); tag_next = 0; next }
    /^\.PD/ { next }
    /^\.\\"/ { next }
    tag_next {
      tag = text($0); gsub(/[][]/, "", tag)
      if (tag !~ /^[a-z_]+=/) {
        gsub(/ /, "_", tag)
        tag = "?=" tag
      }
      key = tag; sub(/=.*/, "", key)
      unit = tag; sub(/^[^=]*=/, "", unit)
      tags[++ntags] = key " " unit
      tag_next = 0
      next
    }
    ntags { body = body " " text($0) }
    END { flush() }
  ' "$1"
}

# A default as an extended regular expression, followed by no more of a
# number or a name.
default_re () {
  printf '%s' "$1" | sed 's/[.]/\\./g'
  printf '%s' '([^0-9A-Za-z_.]|\.([^0-9]|$)|$)'
}

# shellcheck disable=SC2094 # the loop and grep both only read the table
check_man () {
  page=$1
  [ -f "$page" ] || fail "no man page $page"
  man_entries "$page" >"$tmpdir/entries"
  [ -s "$tmpdir/entries" ] || complain "$page: no PARAMETERS list"
  while read -r key unit _; do
    if [ "$key" = "?" ]; then
      complain "$page: a tag of the list is not KEY=UNIT: $unit"
    else
      grep -q "^$key " "$tmpdir/table" ||
        complain "$page: lists $key=$unit, which is not in lib/params.c's table"
    fi
  done <"$tmpdir/entries"
  while read -r name unit def alias; do
    plain_unit=$(printf '%s' "$unit" | tr -d '<>')
    entry=$(grep "^$name " "$tmpdir/entries" | head -n 1)
    if [ "$alias" != - ] && [ -z "$entry" ]; then
      # An alias may be named in its key's paragraph instead.
      grep "^$alias " "$tmpdir/entries" | grep -Eq " $name([^a-z_]|$)" ||
        complain "$page: neither a tag nor $alias's paragraph names $name"
      continue
    fi
    [ -n "$entry" ] || { complain "$page: $name is not listed"; continue; }
    got_unit=$(printf '%s\n' "$entry" | cut -d' ' -f2)
    [ "$got_unit" = "$plain_unit" ] ||
      complain "$page: $name=$got_unit, the table has $name=$plain_unit"
    [ "$alias" = - ] || def=$(grep "^$alias " "$tmpdir/table" | cut -d' ' -f3)
    [ "$def" = - ] && continue
    printf '%s\n' "$entry" | cut -d' ' -f3- |
      grep -Eiq "default:? $(default_re "$def")" ||
      complain "$page: $name's paragraph does not say 'Default $def'"
  done <"$tmpdir/table"
}

# check_help WHAT FILE: FILE is a --help text listing the keys as
# params_print_help does, "key=unit" at the start of a line.
check_help () {
  what=$1 file=$2
  grep -E '^[a-z_]+=' "$file" | sed 's/=.*//' >"$tmpdir/listed"
  while read -r key; do
    grep -q "^$key " "$tmpdir/table" ||
      complain "$what lists $key, which is not in lib/params.c's table"
  done <"$tmpdir/listed"
  while read -r name unit def alias; do
    line=$(grep -F -- "$name=$unit " "$file" | grep "^$name=" | head -n 1)
    if [ -z "$line" ]; then
      complain "$what does not list $name=$unit"
    elif [ "$alias" != - ]; then
      printf '%s\n' "$line" | grep -qF "Alias of $alias." ||
        complain "$what: $name is not shown as an alias of $alias"
    elif [ "$def" != - ]; then
      printf '%s\n' "$line" | grep -qF "(default $def)" ||
        complain "$what: $name does not show '(default $def)'"
    fi
  done <"$tmpdir/table"
}

for page in nbdkit-zonednull-plugin.1 zonednull-server.8 zonednull-ublk.8; do
  check_man "$srcdir/man/$page"
done

run_nbdkit "$ZONEDNULL_PLUGIN" --help >"$tmpdir/nbdkit-help" 2>&1 ||
  fail "nbdkit $ZONEDNULL_PLUGIN --help failed: $(cat "$tmpdir/nbdkit-help")"
check_help "nbdkit zonednull --help (config_help)" "$tmpdir/nbdkit-help"

server=${ZONEDNULL_SERVER:-$builddir/server/zonednull-server}
"$server" --help >"$tmpdir/server-help" || fail "$server --help failed"
check_help "zonednull-server --help" "$tmpdir/server-help"

# zonednull-ublk is built only with liburing.
ublk=$builddir/ublk/zonednull-ublk
if [ -x "$ublk" ]; then
  "$ublk" --help >"$tmpdir/ublk-help" || fail "$ublk --help failed"
  check_help "zonednull-ublk --help" "$tmpdir/ublk-help"
else
  echo "$0: no $ublk (built without liburing): its --help is not checked" >&2
fi

[ "$errors" -eq 0 ] || fail "$errors disagreements with lib/params.c's table"
exit 0
