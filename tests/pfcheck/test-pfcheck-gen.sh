#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# zonednull-pfcheck's generated workloads without a device: workload --gen
# --root runs the generator's operations in a plain directory and writes
# the manifest.  The facts it claims at each step follow POSIX (a table of
# the one-step workloads), every one holds on the tree at the last mark for
# many workloads, and verify fails when the tree is tampered with (a file
# removed, its data changed, a removed name back, a directory gone).
. "${ZONEDNULL_SRCDIR:?run through make check}/tests/common/pfcheck-lib.sh"
w=$tmp/w root=$tmp/root
mkdir -p "$root"
# run INDEX OPS: the workload in a fresh $root.
run () { rm -rf "$root"; mkdir -p "$root"; sh "$pf" workload --gen="$1" --ops="$2" --work="$w" --root="$root" >"$tmp/run.out" 2>&1; }
last_mark () { sed -n 's/^mark //p' "$w/steps" | tail -n 1; }

# ---- options ---------------------------------------------------------------
expect 2 "\-\-ops: 9 steps; a generated workload has 1 to 8" "--ops=9 is refused" \
  sh "$pf" workload --gen=0 --ops=9 --work="$w" --root="$root"
expect 2 "workload 5402 is past the last one (5402 workloads of up to 2 steps" "an index past the end is named" \
  sh "$pf" workload --gen=5402 --ops=2 --work="$w" --root="$root"
expect 2 "\-\-gen takes only checksum-before-fsync" "--gen with another --plant is refused" \
  sh "$pf" workload --gen=0 --plant=rename-without-fsync --work="$w" --root="$root"
expect 2 "\-\-root: '$tmp/none' is not a directory" "--root that is no directory is named" \
  sh "$pf" workload --gen=0 --work="$w" --root="$tmp/none"
expect 2 "campaign needs \-\-params" "campaign without --params names it" \
  sh "$pf" campaign --fs=btrfs --work="$w"

# ---- the facts of each one-step workload -----------------------------------
# "step => facts at fsync-1", a checksum written SUM.
i=0
: >"$tmp/table"
while [ $i -lt 73 ]; do
  run $i 1 || { fail "workload $i: $(cat "$tmp/run.out")"; break; }
  printf '%s => %s\n' "$(sed -n 's/^# step 1: //p' "$w/manifest")" \
    "$(awk '$1 == 1 { s = $3; if (length(s) > 10) s = "SUM"; printf "%s=%s ", $2, s }' "$w/manifest")" >>"$tmp/table"
  i=$((i + 1))
done
# check STEP FACTS WHY
check () {
  if grep -qxF "$1 => $2 " "$tmp/table"; then ok "$1: $2($3)"
  else fail "$1: want '$2' ($3), got '$(grep -F "$1 =>" "$tmp/table")'"; fi
}
if [ "$(sed -n 1p "$tmp/table")" = "create a; fsync a => g/a=? " ] && [ "$(wc -l <"$tmp/table")" = 73 ] &&
   [ "$(sed -n 73p "$tmp/table")" = "rmdir d; sync => g/d=- g/d/c=- " ]; then
  ok "73 one-step workloads, in the documented order"
else
  fail "the one-step workloads: $(head -n 2 "$tmp/table" | tr '\n' ' ') ... $(tail -n 1 "$tmp/table")"
fi
check "create a; fsync a" "g/a=?" "fsync of a new file leaves its name unknown"
check "create b; fsync g" "g/b=+" "the directory's fsync makes the name, not the data, durable"
check "create b; sync" "g/b=SUM" "sync makes both durable"
check "create c; sync" "g/d/c=SUM" "in d too"
check "mkdir d; sync" "g/d=dir g/d/c=-" "a new directory, synced: empty"
check "write a; fdatasync a" "g/a=SUM" "fdatasync of a durable name"
check "write c; fdatasync c" "g/d/c=?" "fdatasync of a new name in d"
check "append a; fsync g" "g/a=+" "appended data needs the file's fsync"
check "rename a b; fsync b" "g/a=? g/b=?" "a rename needs its directory's fsync"
check "rename-over a b; fsync g" "g/a=- g/b=SUM" "a rename over b, the directory fsynced"
check "link a b; fsync g" "g/a=SUM g/b=SUM" "a link to durable data"
check "rename a c; fsync g" "g/a=- g/d/c=?" "across directories, only the fsynced one"
check "rename a c; fsync d" "g/a=? g/d/c=SUM" "across directories, the other one"
check "unlink c; fsync d" "g/d/c=-" "an unlink, its directory fsynced"
check "mkdir d; fsync g" "g/d=dir g/d/c=?" "a new directory: its entries unknown until it is fsynced"
check "rmdir d; fsync g" "g/d=- g/d/c=-" "rmdir: the directory and what was in it"

# ---- many workloads: the manifest holds at the last mark; tampering fails ---
# tamper KIND PATH: the tree no longer as the fact says.
tamper () {
  case $1 in
    -) mkdir -p "$(dirname "$root/$2")" && echo back >"$root/$2" ;;
    dir) rm -rf "${root:?}/$2" ;;
    +) rm -f "$root/$2" ;;
    *) echo changed >>"$root/$2" ;;
  esac
}
# Workloads spread over the two-step ones (1 to 5401) and the three-step
# ones (5402 on): 18 of them, or 52 with ZN_GEN_LONG=1.
if [ "${ZN_GEN_LONG:-0}" = 1 ]; then s2=131 s3=39301; else s2=393 s3=117903; fi
nw=0 nt=0 bad= kinds=
for spec in $(seq 1 $s2 5401 | sed 's/$/:2/') $(seq 5402 $s3 394418 | sed 's/$/:3/'); do
  idx=${spec%:*} ops=${spec#*:}
  run "$idx" "$ops" || { bad="$bad workload $idx: $(tail -n 1 "$tmp/run.out");"; continue; }
  k=$(last_mark)
  v=$(sh "$pf" verify --work="$w" --mark="$k" "$root") || { bad="$bad workload $idx ($(grep '^# step' "$w/manifest" | tr '\n' ' ')): $v;"; continue; }
  nw=$((nw + 1))
  # The facts at the last mark (the last line of each path), each tampered
  # in turn.
  awk '!/^#/ { f[$2] = $3 } END { for (p in f) if (f[p] != "?" && p != "g") print p, f[p] }' "$w/manifest" >"$tmp/facts"
  cp -a "$root" "$tmp/saved"
  while read -r tp tk; do
    tamper "$tk" "$tp"
    if v=$(sh "$pf" verify --work="$w" --mark="$k" "$root"); then
      bad="$bad workload $idx: verify passes with $tp ($tk) tampered: $v;"
    else
      nt=$((nt + 1))
      case $tk in -|dir|+) kinds="$kinds $tk" ;; *) kinds="$kinds data" ;; esac
    fi
    rm -rf "$root"; cp -a "$tmp/saved" "$root"
  done <"$tmp/facts"
  rm -rf "$tmp/saved"
done
# Every kind of fact was tampered with somewhere.
for kind in data - dir +; do
  case " $kinds " in *" $kind "*) ;; *) bad="$bad no fact '$kind' was tampered with;" ;; esac
done
if [ -z "$bad" ]; then ok "$nw workloads: each manifest holds at its last mark, and verify fails with any of its $nt facts tampered"
else fail "$bad"; fi

# ---- the manifest's kinds of fact ------------------------------------------
rm -rf "$root"; mkdir -p "$root/x" "$w"
echo data >"$root/f"
sf=$(sha256sum <"$root/f" | cut -c1-64)
cat >"$w/manifest" <<M
# a comment
0 x dir
0 f +
0 u ?
1 f $sf
1 x ?
2 f ?
2 g -
M
v () { sh "$pf" verify --work="$w" "$@" "$root"; }
expect 0 '2 durable files as fsync-0' "fsync-0: a directory and a file of any data, ? not checked" v --mark=0
expect 0 '1 durable files as fsync-1' "fsync-1: the file's data, x unknown" v --mark=1
rmdir "$root/x"; mkdir "$root/g"
expect 0 '1 durable files as fsync-1' "fsync-1: x gone, unknown from then on" v --mark=1
expect 1 'g: exists, removed by fsync-2' "fsync-2: a name that must be gone" v --mark=2
expect 1 'x: missing, durable since fsync-0' "fsync-0: the directory missing" v --mark=0
mkdir "$root/x"; rm "$root/f"; mkdir "$root/f"
expect 1 'f: is not a file, one since fsync-0' "fsync-0: a directory where a file must be" v --mark=0

echo "test-pfcheck-gen: $nfail failure(s)"
[ "$nfail" = 0 ]
