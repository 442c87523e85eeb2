#!/usr/bin/env bash
# Run pytest with the machine's wall clock moved to INSTANT (UTC), to check that no test
# depends on the hour it runs at: tests/wallclock/run_at.sh "2025-12-31 23:30:00" [pytest args]
# Needs Debian's faketime. Pick instants in the past: deltalake reads file times with
# statx, which libfaketime does not fake, so a clock moved forward makes fresh files look
# old and the log clean-up removes versions. See docs/testing.md.
set -euo pipefail
instant="$1"
shift
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
export TZ=UTC
export FAKETIME_DONT_FAKE_MONOTONIC=1     # thread waits hang when monotonic time is faked
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"   # sitecustomize: time.sleep via select
# An offset from the real clock, not "@INSTANT": with "@", every process starts its own
# clock at INSTANT, so a child started later would be behind its parent (and a webhook
# signed by one would be out of the other's five minutes).
offset=$(( $(date -u -d "$instant" +%s) - $(date -u +%s) ))
exec faketime -f "${offset}s" "$python" -m pytest -p no:cacheprovider "$@"
