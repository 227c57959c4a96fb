#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the `slurm` tests (and to try the job scripts in
# examples/slurm by hand). Everything lives in DIR: slurm.conf for this host's CPUs and memory, a
# munge key and socket, the daemons' state, spool and logs. Nothing outside DIR is touched, and
# the ports are kamp's own (16817/16818), so a site's Slurm on the same host is left alone.
#   tools/slurm-cluster.sh start DIR [--watch-parent]   start munged, slurmctld and slurmd; wait
#       until the node is idle. With --watch-parent the cluster stops by itself when the caller
#       (the ctest run that started it) ends, killed or not.
#   tools/slurm-cluster.sh stop DIR                stop the daemons and remove DIR
#   source <(tools/slurm-cluster.sh env DIR)       point sbatch, srun, squeue, sacct at it
# Needs root (slurmd starts jobs as their user) and Debian's slurmctld slurmd slurm-client munge
# (tools/setup.sh installs them). A daemon that cannot start is an error with its log, never a skip.
set -euo pipefail
command=${1:-} dir=${2:-}
[ -n "$command" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop|env DIR [--watch-parent]" >&2; exit 2; }
dir=$(realpath -m "$dir")
self=$(realpath "$0")
conf=$dir/slurm.conf
daemons=(slurmd slurmctld munged)
fail() {
  echo "slurm-cluster: error: $1" >&2
  [ -n "${2:-}" ] && echo "fix: $2" >&2
  exit 1
}

print_env() {
  echo "export SLURM_CONF=$conf"
  # Jobs see the submitter's environment: one submitted from inside a real Slurm job must not
  # take that job's identity or end time.
  echo "unset SLURM_JOB_ID SLURM_JOBID SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID SLURM_RESTART_COUNT SLURM_JOB_END_TIME"
}

# DIR is removed by stop: only a directory this script made (or none, or an empty one).
check_dir() {
  [ ! -e "$dir" ] && return 0
  [ -d "$dir" ] && [ -z "$(ls -A "$dir")" ] && return 0
  grep -qx "ClusterName=kamp-test" "$conf" 2> /dev/null && return 0
  fail "'$dir' is not a test cluster's directory (no slurm.conf of ClusterName=kamp-test): it is left alone" \
    "give a new or empty directory"
}

# The processes of this cluster's jobs: a job id in their environment beside its slurm.conf
# (slurmd passes SLURM_CONF on; a shell of the user's that only exported it has no job id).
job_processes() {
  local pid
  for pid in $(grep -lsxF "SLURM_CONF=$conf" --null-data /proc/[0-9]*/environ 2> /dev/null | cut -d/ -f3); do
    grep -qsaz '^SLURM_JOB_ID=' "/proc/$pid/environ" && echo "$pid"
  done
  return 0
}

stop() {
  local name pid
  # Jobs first, while the daemons can still end them; then whatever outlived them.
  if [ -f "$conf" ] && [ -f "$dir/slurmctld.pid" ]; then
    local jobs
    jobs=$(SLURM_CONF=$conf squeue -h -o %A 2> /dev/null || true)
    [ -z "$jobs" ] || SLURM_CONF=$conf scancel $jobs 2> /dev/null || true
    for _ in $(seq 50); do [ -z "$(SLURM_CONF=$conf squeue -h -t running 2> /dev/null)" ] && break; sleep 0.2; done
  fi
  for name in "${daemons[@]}"; do
    [ -f "$dir/$name.pid" ] || continue
    pid=$(cat "$dir/$name.pid")
    # Only a process that is still this cluster's daemon (pids are reused).
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "$dir"; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  for pid in $(job_processes); do kill -9 "$pid" 2> /dev/null || true; done
  rm -rf "$dir"
}

daemon_log() { echo "--- $1 (last lines):"; tail -n 20 "$dir/$1" 2>/dev/null || echo "(none)"; }

start() {
  local watch=
  [ "${3:-}" = --watch-parent ] && watch=$PPID
  [ "$(id -u)" = 0 ] || fail "the test cluster needs root (slurmd starts jobs as their owner)" \
    "run the tests as root, or leave the slurm label out: ctest -LE slurm"
  local program
  for program in munged mungekey slurmctld slurmd sbatch sinfo; do
    command -v "$program" > /dev/null || fail "$program is missing" \
      "run tools/setup.sh (Debian packages slurmctld slurmd slurm-client munge)"
  done
  # Slurm 22.05's slurmd initializes its cgroup plugin whatever the other plugins are.
  local cgroup_fs
  cgroup_fs=$(stat -f -c %T /sys/fs/cgroup 2> /dev/null || echo none)
  [ "$cgroup_fs" = cgroup2fs ] || [ "$cgroup_fs" = tmpfs ] || fail \
    "slurmd needs a cgroup file system at /sys/fs/cgroup, and there is none here (a chroot without /sys?)" \
    "mount it: mount --rbind /sys ROOT/sys before the chroot; or leave the slurm tests out: ctest -LE slurm"
  local port
  for port in 16817 16818; do
    if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      fail "port $port is in use: another test cluster is running" "stop it: $0 stop DIR (its directory)"
    fi
  done
  check_dir
  stop
  mkdir -p "$dir"/{state,spool,munge}
  chmod 700 "$dir/munge"
  local host cpus memory
  host=$(hostname -s)
  cpus=$(nproc)
  memory=$(($(awk '/^MemTotal/ {print $2}' /proc/meminfo) / 1024 * 9 / 10))
  # Each setting's reason: proctrack/linuxproc and task/affinity need no cgroups (containers, CI;
  # task/affinity binds each task to its CPUs, as sites do, so OMP_PROC_BIND places threads there);
  # jobcomp/filetxt gives `sacct --completion` without a database; KillWait 10 s between a time
  # limit's SIGTERM and SIGKILL (the site default is 30); CR_Core lets two one-core jobs share
  # the node; MinJobAge keeps finished jobs visible to scontrol for the tests; cred_expire is also
  # the wait before a requeued job starts again (the site default is 120 s); the schedulers look
  # every 2 s (the defaults are 30 and 60 s); config_overrides: slurmd takes the node's CPUs from
  # this file, not from /sys (a chroot may not have it).
  cat > "$conf" << EOF
ClusterName=kamp-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=10
MinJobAge=600
InactiveLimit=0
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=2,sched_interval=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  mungekey --create --keyfile="$dir/munge/munge.key" 2>/dev/null || fail "mungekey could not create a key"
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed" \
    || { daemon_log munged.log; stop; fail "munged did not start" "read its log above"; }
  export SLURM_CONF=$conf
  slurmctld -f "$conf" -i || { daemon_log slurmctld.log; stop; fail "slurmctld did not start" "read its log above"; }
  slurmd -f "$conf" || { daemon_log slurmd.log; stop; fail "slurmd did not start" "read its log above"; }
  local state=
  for _ in $(seq 150); do
    state=$(sinfo -h -N -o %t 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.2
  done
  if [ "$state" != idle ]; then
    daemon_log slurmctld.log
    daemon_log slurmd.log
    stop
    fail "the node did not become idle in 30 s (sinfo: '${state:-no answer}')" "read the daemons' logs above"
  fi
  if [ -n "$watch" ]; then
    # Detached from the caller: stops the cluster once the caller has gone, however it ended;
    # not a later cluster in the same directory (its token differs), nor one already stopped.
    local token=$RANDOM$RANDOM$RANDOM
    echo "$token" > "$dir/watch-token"
    setsid bash -c "while kill -0 $watch 2>/dev/null && [ -d '$dir' ]; do sleep 1; done
      [ \"\$(cat '$dir/watch-token' 2>/dev/null)\" = $token ] && '$self' stop '$dir'" \
      > /dev/null 2>&1 < /dev/null &
  fi
  echo "slurm-cluster: node $host ($cpus CPUs, $memory MB) idle in partition test; SLURM_CONF=$conf"
}

case "$command" in
  start) start "$@" ;;
  stop) check_dir; stop ;;
  env) print_env ;;
  *) echo "usage: $0 start|stop|env DIR [--watch-parent]" >&2; exit 2 ;;
esac
