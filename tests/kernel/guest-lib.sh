# guest-lib.sh: what the 6.12 tier's guest scripts share (sourced).

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
