#!/usr/bin/env bash
# Checks lanchat's Noise handshake against Python's `noiseprotocol` in both roles, plus a
# mismatched network key. Uses (creating it if missing) the venv at Tools/.venv, builds the
# NoiseInterop executable, runs the driver. Exits non-zero on any failure; the last line is
# "noise interop: N passed, M failed".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

if [ -x "$root/Tools/python-env" ]; then
    # The project's shared venv helper (installs noiseprotocol among others).
    python="$("$root/Tools/python-env")"
else
    venv="$root/Tools/.venv"
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import noise.connection' 2>/dev/null; then
        echo "noise interop: setting up $venv" >&2
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check noiseprotocol
    fi
    python="$venv/bin/python"
fi

cd "$root"
swift build --product NoiseInterop >&2
binary="$(swift build --show-bin-path)/NoiseInterop"

"$python" "$here/noise_interop.py" --binary "$binary" "$@"
