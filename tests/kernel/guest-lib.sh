# guest-lib.sh: what the guest scripts share (sourced from /test: every
# tier packs it into its initramfs beside them; the host side has lib.sh).
#
#   ok MESSAGE...    an "ok   - SCRIPT: MESSAGE" line; counts in $passes
#   fail MESSAGE...  a "FAIL - SCRIPT: MESSAGE" line; counts in $fails and,
#                    when $fail_mark names a file, creates it (guest-ublk.sh:
#                    the configuration's FAILED, so the host keeps its files)
#   skip MESSAGE...  a "SKIP - SCRIPT: MESSAGE" line
# SCRIPT is the name of the script that runs (guest-nbd, guest-ublk, ...).
# The host counts the "ok" and "FAIL" lines (check-ublk.sh).

zn_me=$(basename "$0" .sh)
ok () { echo "ok   - $zn_me: $*"; passes=$((passes + 1)); }
fail () {
  echo "FAIL - $zn_me: $*"
  fails=$((fails + 1))
  [ -z "${fail_mark:-}" ] || : >"$fail_mark"
}
skip () { echo "SKIP - $zn_me: $*"; }

# first_diff A B LABEL: the first line where null_blk's file A and the
# other device's file B differ, with the line before it.
first_diff () {
  awk -v fa="$1" -v fb="$2" -v label="$3" 'BEGIN {
    n = 0
    while (1) {
      ra = (getline la < fa) > 0; rb = (getline lb < fb) > 0; n++
      if (!ra && !rb) exit
      if (!ra) la = "<end of file>"
      if (!rb) lb = "<end of file>"
      if (la != lb) {
        if (n > 1) printf "      line %d (both): %s\n", n - 1, prev
        printf "      line %d null_blk: %s\n      line %d %-9s %s\n", n, la, n, label ":", lb
        exit
      }
      prev = la
    }
  }'
}
