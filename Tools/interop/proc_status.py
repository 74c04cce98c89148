"""A process's figures from /proc/PID/status, for the interop scripts that watch a node's memory."""


def mebibytes(pid, field):
    """The figure `field` (VmRSS, RssAnon, VmHWM...) of process `pid`, in MiB; 0 when absent."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0
