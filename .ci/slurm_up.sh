#!/usr/bin/env bash
# Start a real single-node SLURM (slurmctld + slurmd, munge authentication) on this machine, for
# tests/test_slurm.py: the batch jobs that cluster/jobqueue_cluster.make_cluster("slurm") submits then run
# here, as on a cluster's compute node.
#
#     bash .ci/slurm_up.sh     # exit 0: `sinfo` shows this host's node idle; `sbatch` takes jobs
#     bash .ci/slurm_down.sh   # stop it again (safe to run twice)
#
# Needs root (the daemons run as root; munged as the munge user) and, when SLURM is not installed yet,
# Debian's package mirror (apt-get install slurmctld slurmd slurm-client munge; about 10 s).  Exits 1 with a
# message on stderr when it cannot: .ci/run then skips the SLURM tests loudly instead of failing CI.
# It writes /etc/slurm/slurm.conf, marked as its own; it refuses to touch a slurm.conf that it did not write
# (a site's real configuration), and logs to /var/log/slurm/.
set -uo pipefail

CONF_DIR=/etc/slurm
CONF="$CONF_DIR/slurm.conf"
MARK="# written by daskdca's .ci/slurm_up.sh"
LOG_DIR=/var/log/slurm
PACKAGES=(slurmctld slurmd slurm-client munge)

fail() {
    echo "slurm_up.sh: $*" >&2
    exit 1
}

# The daemons' logs, for a start that went wrong.
show_logs() {
    local log
    for log in "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log" /var/log/munge/munged.log; do
        if [ -s "$log" ]; then
            echo "---- last lines of $log" >&2
            tail -n 20 "$log" >&2
        fi
    done
}

[ "$(id -u)" -eq 0 ] || fail "needs root to install and start the SLURM daemons (running as $(id -un))."

have_all() {
    command -v slurmctld && command -v slurmd && command -v sbatch && command -v sinfo && command -v munged
}

if ! have_all >/dev/null; then
    command -v apt-get >/dev/null || fail "SLURM is not installed and there is no apt-get to install it."
    export DEBIAN_FRONTEND=noninteractive
    # bounded: an unreachable mirror must cost CI minutes, not its whole time limit
    # (waiting up to 2 minutes for another apt or dpkg that holds the lock)
    timeout 300 apt-get -o DPkg::Lock::Timeout=120 update -qq >/dev/null \
        || fail "apt-get update failed (no package mirror reachable?)."
    timeout 600 apt-get -o DPkg::Lock::Timeout=120 install -y -qq --no-install-recommends "${PACKAGES[@]}" \
            >/tmp/daskdca-slurm-apt.log 2>&1 \
        || { tail -n 20 /tmp/daskdca-slurm-apt.log >&2; fail "apt-get install ${PACKAGES[*]} failed."; }
    have_all >/dev/null || fail "apt-get installed ${PACKAGES[*]} but slurmctld, slurmd, sbatch, sinfo or munged is missing."
fi

if [ -e "$CONF" ] && ! grep -qxF "$MARK" "$CONF"; then
    fail "$CONF exists and was not written by this script (a real SLURM configuration?); leaving it alone."
fi

# A previous run's daemons (a CI run killed before its trap ran) would hold the ports and pid files.
bash "$(dirname "$0")/slurm_down.sh" >/dev/null 2>&1

# This node as slurmd sees it (CPUs, sockets, cores, threads, memory): a node configured with more than it
# has registers as invalid and is drained.  RealMemory is capped at 4 GB, plenty for the tests' 1 GB jobs.
HOST="$(hostname -s)"
read -r -a HARDWARE <<<"$(slurmd -C | head -n 1)"
declare -A NODE=()
for field in "${HARDWARE[@]}"; do
    NODE["${field%%=*}"]="${field#*=}"
done
for key in CPUs Boards SocketsPerBoard CoresPerSocket ThreadsPerCore RealMemory; do
    [[ "${NODE[$key]:-}" =~ ^[0-9]+$ ]] || fail "could not read $key from \`slurmd -C\` (got: ${HARDWARE[*]})."
done
MEMORY=$(( NODE[RealMemory] < 4096 ? NODE[RealMemory] : 4096 ))

mkdir -p "$CONF_DIR" "$LOG_DIR" /var/spool/slurmctld /var/spool/slurmd
chmod 755 /var/spool/slurmd  # slurmd runs the batch scripts from here
# The keys are the slurm.conf(5) man page's of SLURM 22.05 (Debian 12).  Addresses are 127.0.0.1, so that a
# host name that does not resolve cannot stop the daemons from finding each other.
cat >"$CONF" <<EOF
$MARK
# A single-node SLURM for daskdca's tests; removed by .ci/slurm_down.sh.
ClusterName=daskdca-ci
SlurmctldHost=$HOST(127.0.0.1)
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
# no cgroups: a container need not let slurmd create them; processes are tracked through /proc
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
# CPUs and memory are what jobs consume, so that two 1-CPU jobs share the node (select/linear gives each
# job a whole node, and a CPU-per-core count would cost a whole core on a machine with hyperthreads)
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
# a node that was down (a slurmd restarted by slurm_down.sh / slurm_up.sh) comes back when it registers
ReturnToService=2
# a cancelled job's processes get SIGTERM, then SIGKILL 5 s later (default 30 s)
KillWait=5
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=${NODE[CPUs]} Boards=${NODE[Boards]} SocketsPerBoard=${NODE[SocketsPerBoard]} CoresPerSocket=${NODE[CoresPerSocket]} ThreadsPerCore=${NODE[ThreadsPerCore]} RealMemory=$MEMORY State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF

# munge: its key comes with the package (made at install); make one if it is missing.
if [ ! -s /etc/munge/munge.key ]; then
    mkdir -p /etc/munge
    mungekey --create --keyfile=/etc/munge/munge.key || fail "could not create /etc/munge/munge.key."
    chown munge:munge /etc/munge/munge.key
    chmod 600 /etc/munge/munge.key
fi
# systemd makes munged's runtime folder (RuntimeDirectory=munge); without systemd it is made here
mkdir -p /run/munge
chown munge:munge /run/munge
chmod 755 /run/munge
if id munge >/dev/null 2>&1; then
    runuser -u munge -- munged || { show_logs; fail "munged did not start."; }
else
    munged --force || { show_logs; fail "munged did not start."; }
fi
munge -n | unmunge >/dev/null || { show_logs; fail "munge cannot encode and decode a credential."; }

# -c: start with no jobs from an earlier run's saved state
slurmctld -c || { show_logs; fail "slurmctld did not start."; }
slurmd -N "$HOST" || { show_logs; fail "slurmd did not start."; }

# Ready when the node is idle: registered with this configuration and accepting jobs.
state=""
for _ in $(seq 60); do
    state="$(sinfo -h -N -n "$HOST" -o %T 2>/dev/null | head -n 1)"
    [ "$state" = "idle" ] && break
    sleep 1
done
if [ "$state" != "idle" ]; then
    sinfo -N -l >&2
    scontrol show node "$HOST" >&2
    show_logs
    fail "node $HOST is '${state:-unknown}', not idle, 60 s after the daemons started."
fi
echo "slurm_up.sh: SLURM $(sinfo --version | cut -d' ' -f2) is up: node $HOST idle, ${NODE[CPUs]} CPUs, ${MEMORY} MB, partition debug."
