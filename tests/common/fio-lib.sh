# SPDX-License-Identifier: BSD-3-Clause
# Helpers for the fio engine's tests; source it, do not run it.
# shellcheck shell=sh
#
# Environment (exported by `make check`) on top of lib.sh's:
# ZONEDNULL_FIO_ENGINE, the built engine (empty when configure had no
# --with-fio); FIO, the fio program; ZONEDNULL_CLI.
. "$(dirname "$0")/../common/lib.sh"

[ -n "${ZONEDNULL_FIO_ENGINE:-}" ] ||
  skip "the fio engine is not built: configure --with-fio=DIR (./run test does)"
[ -f "$ZONEDNULL_FIO_ENGINE" ] || fail "no engine at $ZONEDNULL_FIO_ENGINE"
case ${FIO:-no} in no | '') FIO=fio ;; esac
command -v "$FIO" >/dev/null || skip "fio is not installed"
: "${ZONEDNULL_CLI:=${ZONEDNULL_BUILDDIR:-.}/cli/zonednull}"
[ -x "$ZONEDNULL_CLI" ] || fail "no CLI at $ZONEDNULL_CLI"
# JSON is checked with Debian's python3 (pyenv's may come first on PATH).
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || skip "$PYTHON is not installed"

# fio_cmd ARG...: fio, with the sanitizer runtimes preloaded when the
# engine is built with them (fio itself is not), as exec_nbdkit does.
fio_cmd () {
  if [ -n "${ZONEDNULL_PRELOAD:-}" ]; then
    env LD_PRELOAD="$ZONEDNULL_PRELOAD" ASAN_OPTIONS=detect_leaks=0 \
      "$FIO" "$@"
  else
    "$FIO" "$@"
  fi
}

# run_fio NAME ARG...: one fio job NAME through the engine against $uri,
# file name "zn" (fio shares zone state between jobs by file name).  Sets
# $rc; fio's report is in $tmpdir/NAME.out, its messages in NAME.err.
# fio runs in $tmpdir, where it leaves its verify state files.
run_fio () {
  name=$1
  shift
  (cd "$tmpdir" &&
   fio_cmd --output-format=normal,json --output="$tmpdir/$name.out" \
     --name="$name" --ioengine="external:$ZONEDNULL_FIO_ENGINE" \
     --uri="$uri" --filename=zn "$@" >"$tmpdir/$name.err" 2>&1)
  rc=$?
}

# fio_summary FILE: "jobs=N errors=N write=B read=B trim=B syncs=N
# resets=N" from
# fio's normal+json report (errors: the sum of the jobs' error codes).
fio_summary () {
  "$PYTHON" - "$1" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
start = text.index('{\n')
obj, end = json.JSONDecoder().raw_decode(text, start)
rest = text[:start] + text[end:]
jobs = obj["jobs"]
total = lambda d: sum(j[d]["io_bytes"] for j in jobs)
resets = sum(int(n) for n in re.findall(r"(\d+) zone resets", rest))
syncs = sum(j["sync"]["total_ios"] for j in jobs)
print("jobs=%d errors=%d write=%d read=%d trim=%d syncs=%d resets=%d" % (
    len(jobs), sum(j["error"] for j in jobs), total("write"),
    total("read"), total("trim"), syncs, resets))
PY
}

# fio_ok NAME ARG...: the job must succeed: exit 0, no job error, some
# I/O.  Leaves the summary's fields in $jobs $errors $write $read $trim
# $syncs $resets.
fio_ok () {
  t0=$(($(date +%s%N) / 1000000))
  run_fio "$@"
  name=$1
  shift
  [ "$rc" -eq 0 ] ||
    fail "fio $name ($*): exit $rc:
$(cat "$tmpdir/$name.err")"
  summary=$(fio_summary "$tmpdir/$name.out") ||
    fail "fio $name: no JSON report: $(cat "$tmpdir/$name.out")"
  eval "$summary"
  echo "$name: $summary ($(($(date +%s%N) / 1000000 - t0)) ms)"
  [ "$errors" -eq 0 ] || fail "fio $name: $summary"
  [ "$((write + read + trim))" -gt 0 ] || fail "fio $name did no I/O: $summary"
  ! grep -q 'io_u error\|verify:' "$tmpdir/$name.err" "$tmpdir/$name.out" ||
    fail "fio $name: $(grep 'io_u error\|verify:' "$tmpdir/$name.err" "$tmpdir/$name.out")"
}

# fio_verified NAME ARG...: fio_ok with verify=crc32c; every byte written
# must have been read back and checked.
fio_verified () {
  fio_ok "$@" --verify=crc32c --do_verify=1
  [ "$write" -gt 0 ] && [ "$read" -eq "$write" ] ||
    fail "fio $1: wrote $write bytes but verified $read"
}

# Tag of check_zones' files, for checks running in parallel.
ztag=

# check_zones NR_CONV MODE [BYTES]: the device's zone report and header,
# through the CLI, must be consistent (contiguous zones, NR_CONV leading
# conventional ones, write pointers within capacity, conditions matching
# write pointers, counters matching conditions, open and active limits
# kept), and:
#   MODE full      every sequential zone is FULL
#   MODE empty     every sequential zone is EMPTY
#   MODE written   the sequential zones hold BYTES bytes (sum of wp - start)
#   MODE any       nothing more
check_zones () {
  "$ZONEDNULL_CLI" report --json "$uri" >"$tmpdir/report$ztag.json" ||
    fail "zonednull report failed"
  "$ZONEDNULL_CLI" info --json "$uri" >"$tmpdir/info$ztag.json" ||
    fail "zonednull info failed"
  "$PYTHON" - "$tmpdir/report$ztag.json" "$tmpdir/info$ztag.json" "$@" <<'PY' ||
import json, sys
zones = json.load(open(sys.argv[1]))["zones"]
info = json.load(open(sys.argv[2]))
nr_conv, mode = int(sys.argv[3]), sys.argv[4]
want = int(sys.argv[5]) if len(sys.argv) > 5 else None
bad = []
def check(cond, msg):
    if not cond:
        bad.append(msg)
check(len(zones) == info["nr_zones"], "report has %d zones, info %d" % (len(zones), info["nr_zones"]))
check(info["nr_conv"] == nr_conv, "%d conventional zones, expected %d" % (info["nr_conv"], nr_conv))
pos = 0
count = {"imp": 0, "exp": 0, "closed": 0}
written = 0
for i, z in enumerate(zones):
    check(z["start"] == pos, "zone %d starts at %d, expected %d" % (i, z["start"], pos))
    pos = z["start"] + z["len"]
    if i < nr_conv:
        check(z["type"] == 1 and z["cond"] == 0 and z["wp"] is None, "zone %d is not conventional: %s" % (i, z))
        continue
    check(z["type"] == 2, "zone %d is not sequential: %s" % (i, z))
    wp, start, cap = z["wp"], z["start"], z["cap"]
    c = z["cond_name"]
    if c == "FULL":
        check(wp in (start + cap, start + z["len"]), "zone %d FULL with wp %d" % (i, wp))
        written += cap
        continue
    check(start <= wp < start + cap, "zone %d wp %d outside [%d, %d)" % (i, wp, start, start + cap))
    written += wp - start
    if c == "EMPTY":
        check(wp == start, "zone %d EMPTY with wp %d" % (i, wp))
    elif c in ("IMP_OPEN", "EXP_OPEN", "CLOSED"):
        check(wp > start or c == "EXP_OPEN", "zone %d %s at its start" % (i, c))
        count[{"IMP_OPEN": "imp", "EXP_OPEN": "exp", "CLOSED": "closed"}[c]] += 1
    else:
        check(False, "zone %d in condition %s" % (i, c))
    if mode == "full":
        check(False, "zone %d is %s, expected FULL" % (i, c))
    if mode == "empty":
        check(c == "EMPTY", "zone %d is %s, expected EMPTY" % (i, c))
check(pos == info["size"] // 512, "zones end at sector %d, device at %d" % (pos, info["size"] // 512))
check(count["imp"] == info["imp_open"] and count["exp"] == info["exp_open"] and count["closed"] == info["closed"],
      "counters %s disagree with the report %s" % ({k: info[k] for k in ("imp_open", "exp_open", "closed")}, count))
opened = count["imp"] + count["exp"]
if info["max_open"]:
    check(opened <= info["max_open"], "%d open zones over the limit %d" % (opened, info["max_open"]))
if info["max_active"]:
    check(opened + count["closed"] <= info["max_active"], "%d active zones over the limit %d" % (opened + count["closed"], info["max_active"]))
if mode == "written":
    check(written * 512 == want, "sequential zones hold %d bytes, fio wrote %d" % (written * 512, want))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
    fail "zone report after the last job ($*):
$(cat "$tmpdir/report$ztag.json")"
}
