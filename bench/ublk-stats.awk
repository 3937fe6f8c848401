# SPDX-License-Identifier: BSD-3-Clause
# bench/ublk-stats.awk: the per-I/O breakdown of bench/ublk-vs-nullblk.sh's
# raw file (RESULT, THREAD, STRACE and SEED lines, described in
# bench/ublk-vs-nullblk-guest.sh), as one metric a line, medians over the
# repeats:
#   B JOB DEV COLUMN VALUE          per device and job (local part)
#   T JOB DEV THREAD COLUMN VALUE   per thread of the servers
#   S JOB DEV TAG SYSCALL VALUE     strace: calls per I/O
#   E EXP DEV COLUMN VALUE          the seeds' experiments
# awk -v RUNTIME=3 -f bench/ublk-stats.awk RAW.  A THREAD is named
# TAG+RANK:COMM:WCHAN, RANK its place in the TIDs of its process (d0 the
# server's main thread, s0 conn's zonednull-server's), WCHAN where it
# slept after the last run.  mawk-compatible (no asort).

function med(a, k, m,   j, t, v, c) {
  if (!m) return 0
  for (j = 1; j <= m; j++) v[j] = a[k, j] + 0
  for (j = 2; j <= m; j++) { t = v[j]; c = j - 1; while (c > 0 && v[c] > t) { v[c + 1] = v[c]; c-- } v[c + 1] = t }
  return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
}
function add(k, col, v) { n[k, col]++; val[k, col, n[k, col]] = v; cols[k, col] = 1 }

$1 == "RESULT" {
  k = $2 SUBSEP $3
  ios[$2, $3, $4] = $6
  if (!(k in seenr)) { seenr[k] = 1; rk[++nr] = k }
  add(k, "iops", $5)
  if ($6 > 0) { add(k, "guest_ctx", $8 / $6); add(k, "guest_cpu_us", $7 * 10000 / $6) }
}
$1 == "THREAD" {
  k = $2 SUBSEP $3 SUBSEP $4 SUBSEP $5
  if (!(k in seent)) { seent[k] = 1; tk[++nt] = k }
  tns[k] += $8; tv[k] += $9; tn[k] += $10; trc[k] += $11; twc[k] += $12; tsr[k] += $13; tsw[k] += $14
  th = $2 SUBSEP $3 SUBSEP $4 SUBSEP $5 SUBSEP $6
  if (!(th in seenth)) { seenth[th] = 1; thk[++nth] = th }
  hns[th] = $8; hv[th] = $9; hn[th] = $10; hrc[th] = $11; hwc[th] = $12; hsr[th] = $13; hsw[th] = $14
  comm[$3, $5, $6] = $7; wchan[$3, $5, $6] = $15
  tids[$3, $5, $6] = 1
}
$1 == "STRACE" {
  k = $2 SUBSEP $3 SUBSEP $4
  if (!(k in seens)) { seens[k] = 1; sk[++ns] = k }
  if ($5 > 0) { sc[k, $6] += $7 / $5; tot[k] += $7 / $5 }
  if (!((k, $6) in seensc)) { seensc[k, $6] = 1; scn[k, ++nsc[k]] = $6 }
}
$1 == "SEED" {
  k = $2 SUBSEP $3
  if (!(k in seene)) { seene[k] = 1; ek[++ne] = k }
  nio = ($5 + $6) * RUNTIME
  add("E" SUBSEP k, "read_iops", $5); add("E" SUBSEP k, "write_iops", $6)
  if (nio > 0) {
    add("E" SUBSEP k, "guest_cpu_us", $7 * 10000 / nio); add("E" SUBSEP k, "guest_ctx", $8 / nio)
    add("E" SUBSEP k, "daemon_cpu_us", $10 / 1000 / nio); add("E" SUBSEP k, "daemon_wakeups", $11 / nio)
  }
}
END {
  # the servers' threads summed per run, per I/O
  for (i = 1; i <= nt; i++) {
    split(tk[i], f, SUBSEP)
    io = ios[f[1], f[2], f[3]]
    if (io <= 0) continue
    k = f[1] SUBSEP f[2]; p = f[4] == "d" ? "daemon" : "server"
    add(k, p "_cpu_us", tns[tk[i]] / 1000 / io); add(k, p "_wakeups", tv[tk[i]] / io)
    add(k, p "_preempted", tn[tk[i]] / io)
    add(k, p "_rw_calls", (tsr[tk[i]] + tsw[tk[i]]) / io)
    add(k, p "_rw_bytes", (trc[tk[i]] + twc[tk[i]]) / io)
  }
  order = "iops guest_ctx guest_cpu_us daemon_cpu_us daemon_wakeups daemon_preempted daemon_rw_calls daemon_rw_bytes server_cpu_us server_wakeups server_preempted server_rw_calls server_rw_bytes"
  nc = split(order, oc, " ")
  for (i = 1; i <= nr; i++) {
    split(rk[i], f, SUBSEP)
    for (c = 1; c <= nc; c++)
      if ((rk[i], oc[c]) in cols)
        printf "B %s %s %s %.6g\n", f[1], f[2], oc[c], med(val, rk[i] SUBSEP oc[c], n[rk[i], oc[c]])
  }
  # per thread: rank by TID within the process
  for (t in tids) {
    split(t, f, SUBSEP); r = 0
    for (u in tids) { split(u, g, SUBSEP); if (g[1] == f[1] && g[2] == f[2] && g[3] + 0 < f[3] + 0) r++ }
    rank[t] = f[2] r
  }
  for (i = 1; i <= nth; i++) {
    split(thk[i], f, SUBSEP)
    io = ios[f[1], f[2], f[3]]
    if (io <= 0) continue
    name = rank[f[2], f[4], f[5]] ":" comm[f[2], f[4], f[5]] ":" wchan[f[2], f[4], f[5]]
    k = f[1] SUBSEP f[2] SUBSEP name
    if (!(k in seenq)) { seenq[k] = 1; qk[++nq] = k }
    add(k, "cpu_us", hns[thk[i]] / 1000 / io); add(k, "wakeups", hv[thk[i]] / io)
    add(k, "preempted", hn[thk[i]] / io); add(k, "read_calls", hsr[thk[i]] / io)
    add(k, "write_calls", hsw[thk[i]] / io); add(k, "read_bytes", hrc[thk[i]] / io)
    add(k, "write_bytes", hwc[thk[i]] / io)
  }
  nc = split("cpu_us wakeups preempted read_calls write_calls read_bytes write_bytes", oc, " ")
  for (i = 1; i <= nq; i++) {
    split(qk[i], f, SUBSEP)
    for (c = 1; c <= nc; c++)
      printf "T %s %s %s %s %.6g\n", f[1], f[2], f[3], oc[c], med(val, qk[i] SUBSEP oc[c], n[qk[i], oc[c]])
  }
  for (i = 1; i <= ns; i++) {
    split(sk[i], f, SUBSEP)
    printf "S %s %s %s total %.6g\n", f[1], f[2], f[3], tot[sk[i]]
    for (j = 1; j <= nsc[sk[i]]; j++)
      printf "S %s %s %s %s %.6g\n", f[1], f[2], f[3], scn[sk[i], j], sc[sk[i], scn[sk[i], j]]
  }
  nc = split("read_iops write_iops guest_cpu_us guest_ctx daemon_cpu_us daemon_wakeups", oc, " ")
  for (i = 1; i <= ne; i++) {
    split(ek[i], f, SUBSEP)
    for (c = 1; c <= nc; c++)
      if (("E" SUBSEP ek[i], oc[c]) in cols)
        printf "E %s %s %s %.6g\n", f[1], f[2], oc[c], med(val, "E" SUBSEP ek[i] SUBSEP oc[c], n["E" SUBSEP ek[i], oc[c]])
  }
}
