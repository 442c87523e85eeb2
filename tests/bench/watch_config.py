"""The watch config the benchmarks run with: budgets of every scope and due dates, on
the synthetic workspace's project names (`project`: one project's name; `due`: TOML
lines of due dates). Benchmark 8 points it at an emulator, the growth table at no
service (it runs the checks over the store alone)."""

WATCH_CONFIG = """\
store = "{root}"
interval = "15m"
[workspaces.bench]
base_url = "{url}"
key_env = "BENCH_WATCH_KEY"
[[budgets]]
scope = "project"
name = "{project}"
period = "month"
credits = 100000
[[budgets]]
scope = "workspace"
name = "bench"
period = "week"
credits = 20
[[budgets]]
scope = "agency"
period = "month"
credits = 10000000
[due]
{due}
"""
