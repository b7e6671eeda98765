#!/usr/bin/env bash
# Stop the single-node SLURM that .ci/slurm_up.sh started: cancel every job, then stop slurmd, slurmctld
# and munged (by the process ids in their pid files).  Safe to run twice, or with nothing running: it
# always exits 0.  It leaves the packages and /etc/slurm/slurm.conf in place (the next slurm_up.sh
# rewrites that file).
set -uo pipefail

CONF=/etc/slurm/slurm.conf
MARK="# written by daskdca's .ci/slurm_up.sh"

# Only the daemons of our own configuration: a site's SLURM on this machine is not ours to stop.
if [ -e "$CONF" ] && ! grep -qxF "$MARK" "$CONF"; then
    echo "slurm_down.sh: $CONF was not written by .ci/slurm_up.sh; leaving its daemons alone." >&2
    exit 0
fi

# The process id in a pid file, where that process still runs.
running_pid() {
    local pid
    [ -s "$1" ] || return 1
    pid="$(head -n 1 "$1" | tr -dc 0-9)"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# SIGTERM, up to 15 s to exit, then SIGKILL.
stop() {
    local name="$1" pidfile="$2" pid
    pid="$(running_pid "$pidfile")" || return 0
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 30); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; echo "slurm_down.sh: stopped $name ($pid)"; return 0; }
        sleep 0.5
    done
    kill -KILL "$pid" 2>/dev/null
    rm -f "$pidfile"
    echo "slurm_down.sh: killed $name ($pid), which did not stop on SIGTERM" >&2
}

# Cancel the jobs while slurmctld and slurmd still run, so that slurmd ends their processes (dask workers)
# instead of leaving them behind; wait for them to go (KillWait=5 in slurm.conf).
if running_pid /run/slurmctld.pid >/dev/null && command -v squeue >/dev/null; then
    jobs="$(timeout 20 squeue -h -o %i 2>/dev/null)"
    if [ -n "$jobs" ]; then
        # shellcheck disable=SC2086  # one argument per job id
        timeout 20 scancel $jobs 2>/dev/null
        for _ in $(seq 30); do
            [ -z "$(timeout 20 squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.5
        done
        echo "slurm_down.sh: cancelled jobs $(echo $jobs | tr '\n' ' ')"
    fi
fi

stop slurmd /run/slurmd.pid
stop slurmctld /run/slurmctld.pid
stop munged /run/munge/munged.pid
exit 0
