#!/usr/bin/env bash
# A real single-node Slurm on loopback, all its files under one folder (docs/cluster.md, "A real Slurm on one machine").
#
#   scripts/slurm-local.sh install        Debian packages slurmctld slurmd slurm-client munge (once; needs root)
#   scripts/slurm-local.sh start DIR      private munged + slurmctld + slurmd under DIR; waits until the node is idle
#   scripts/slurm-local.sh stop DIR       cancels every job, stops the three daemons, checks none is left
#   scripts/slurm-local.sh env DIR        prints the export line clients need (SLURM_CONF)
#
# Safe to run twice: install skips present packages, start reuses running daemons, stop of a stopped one is a no-op.
set -euo pipefail

packages=(slurmctld slurmd slurm-client munge)

die() { echo "slurm-local: error: $*" >&2; exit 1; }

install_packages() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || die "installing ${missing[*]} needs root"
  echo "slurm-local: installing ${missing[*]}"
  # the munge package would start a system munged that nobody stops: forbid service starts during the install
  local policy=/usr/sbin/policy-rc.d created=0
  if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod 755 "$policy"; created=1; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  local rc=$?
  [ "$created" -eq 1 ] && rm -f "$policy"
  return $rc
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

write_conf() {
  local d=$1 node
  node=$(slurmd -C | head -1)   # "NodeName=... CPUs=... RealMemory=..." as this machine reports them
  local name=${node#NodeName=}; name=${name%% *}
  cat > "$d/slurm.conf" <<EOF
ClusterName=lmbr
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmctldPort=6817
SlurmdPort=6818
MpiDefault=none
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
ReturnToService=2
KillWait=5
MinJobAge=600
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$d/log/jobcomp.log
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=local Nodes=$name Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  local d; d=$(realpath -m "$1")
  command -v slurmctld >/dev/null || install_packages
  getent hosts "$(hostname)" >/dev/null || die "the host name $(hostname) does not resolve: the daemons would die"
  mkdir -p "$d"/{munge,state,spool,log}
  chmod 755 "$d/munge"   # munged requires its socket's folder to be searchable by all; the key stays mode 600
  [ -f "$d/munge/munge.key" ] || { head -c 1024 /dev/urandom > "$d/munge/munge.key"; chmod 600 "$d/munge/munge.key"; }
  [ -f "$d/slurm.conf" ] || write_conf "$d"
  export SLURM_CONF=$d/slurm.conf
  if ! alive "$d/slurmctld.pid"; then  # another Slurm (a test session killed before its teardown?) on the ports
    for port in 6817 6818; do
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        die "port $port is taken (another slurmctld/slurmd?): stop it first (scripts/slurm-local.sh stop ITS_DIR)"
      fi
    done
  fi
  if ! alive "$d/munged.pid"; then
    # --force: a folder below a private (mode 700) parent, as pytest's, is refused otherwise
    setsid munged --foreground --force --socket="$d/munge/munge.socket" --key-file="$d/munge/munge.key" \
      --pid-file="$d/munged.pid" --log-file="$d/log/munged.log" --seed-file="$d/munge/munge.seed" \
      </dev/null >>"$d/log/munged.out" 2>&1 &
    echo $! > "$d/munged.pid"
    for _ in $(seq 50); do [ -S "$d/munge/munge.socket" ] && break; sleep 0.1; done
    [ -S "$d/munge/munge.socket" ] || die "munged did not start; see $d/log/munged.out"
  fi
  if ! alive "$d/slurmctld.pid"; then
    setsid slurmctld -D </dev/null >>"$d/log/slurmctld.out" 2>&1 &
    echo $! > "$d/slurmctld.pid"
  fi
  if ! alive "$d/slurmd.pid"; then
    setsid slurmd -D </dev/null >>"$d/log/slurmd.out" 2>&1 &
    echo $! > "$d/slurmd.pid"
  fi
  for _ in $(seq 120); do
    if sinfo -h -o %t 2>/dev/null | grep -qx idle; then echo "slurm-local: up ($d/slurm.conf)"; return 0; fi
    sleep 0.5
  done
  die "the node did not become idle in 60 s; see $d/log/"
}

stop() {
  local d; d=$(realpath -m "$1")
  [ -f "$d/slurm.conf" ] || return 0
  export SLURM_CONF=$d/slurm.conf
  if alive "$d/slurmctld.pid"; then
    scancel --full --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 60); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.5; done
  fi
  local pids=()
  for daemon in slurmd slurmctld munged; do
    alive "$d/$daemon.pid" && pids+=("$(cat "$d/$daemon.pid")") && kill -TERM "$(cat "$d/$daemon.pid")" 2>/dev/null
  done
  for _ in $(seq 50); do
    local left=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
    [ $left -eq 0 ] && break; sleep 0.2
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -f "$d"/{slurmd,slurmctld,munged}.pid
  # job steps ignore SIGTERM and may outlive the daemons: none may be left
  pgrep -f "slurmstepd.*" >/dev/null && pkill -KILL -f "slurmstepd" || true
  for pid in "${pids[@]}"; do
    if [ -e "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then
      die "process $pid still runs"
    fi
  done
  echo "slurm-local: stopped"
}

case "${1:-}" in
  install) install_packages ;;
  start) [ $# -eq 2 ] || die "usage: $0 start DIR"; start "$2" ;;
  stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
  env) [ $# -eq 2 ] || die "usage: $0 env DIR"; echo "export SLURM_CONF=$(realpath -m "$2")/slurm.conf" ;;
  *) die "usage: $0 install | start DIR | stop DIR | env DIR" ;;
esac
