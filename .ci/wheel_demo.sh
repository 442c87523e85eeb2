#!/usr/bin/env bash
# CI: the main job as a user gets it (issue 36). Builds the sdist and the wheel from it,
# installs the wheel into a clean venv in a temporary folder outside the checkout, and
# there runs the README's first command (`toolkit demo` at its defaults: 24 simulated
# hours, report in ./data/demo), `toolkit report --html` and `--json` on the demo's
# store, and the pytest plugin's README example. Then `pip install path/to/checkout` (the
# README's advice, not editable) into another clean venv, and `toolkit demo --hours 2`
# from a folder outside the checkout. The wheel installed first is built from the sdist,
# so it is what `pip install` of the sdist installs; the sdist is checked to carry no
# tests. Each must exit 0; the first that does not fails CI. Nothing of the checkout is
# on the path: PYTHONPATH and CTS_* are unset.
#
#   .ci/wheel_demo.sh            # uses uv (the test extra installs it) and python3
#   PYTHON=/usr/bin/python3.12 .ci/wheel_demo.sh
#
# About 2-3 minutes on an idle machine (docs/testing.md has the measured figures).
set -euo pipefail

checkout="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3}"
if command -v uv >/dev/null 2>&1; then uv=(uv); else uv=("$python" -m uv); fi
work="$(mktemp -d "${TMPDIR:-/tmp}/toolkit-wheel-demo.XXXXXX")"
# Building in the checkout (the sdist, pip's build of the checkout) leaves build/ and
# *.egg-info there (git-ignored): removed at the end unless they were there before.
left=("$work")
for made in build chapter_translation_toolkit.egg-info; do
  [ -e "$checkout/$made" ] || left+=("$checkout/$made")
done
trap 'rm -rf "${left[@]}"' EXIT
step() { echo "== wheel demo: $* ($(date -u +%H:%M:%S))"; }

step "build the sdist and the wheel from it"
# From the sdist, as `pip install` of an sdist does; no build/ is left in the checkout.
"${uv[@]}" build -q --out-dir "$work/dist" "$checkout"
wheel=("$work"/dist/*.whl)

step "the sdist carries no tests (MANIFEST.in; docs/testing.md)"
sdist=("$work"/dist/*.tar.gz)
if tar tzf "${sdist[0]}" | grep -E '^[^/]+/(tests|notebooks|docs)/'; then
  echo "the sdist carries the files above: its tests cannot run from it" >&2; exit 1
fi

step "install ${wheel[0]##*/} into a clean venv"
"${uv[@]}" venv -q --python "$python" "$work/venv"
"${uv[@]}" pip install -q --python "$work/venv/bin/python" "${wheel[0]}" pytest

mkdir "$work/user"
cd "$work/user"
unset PYTHONPATH CTS_STORE CTS_BASE_URL CTS_API_KEY CTS_WEBHOOK_SECRET
bin="$work/venv/bin"
started=$SECONDS

step "toolkit demo (the README's first command, at its defaults)"
"$bin/toolkit" demo
test -s data/demo/weekly-report.html
demo_seconds=$((SECONDS - started))

step "toolkit report --html and --json on the demo's store"
"$bin/toolkit" report --html --store data/demo/snapshots --out report
test -s report/weekly-report.html
"$bin/toolkit" report --json --store data/demo/snapshots --out report
test -s report/figures.json

step "the pytest plugin's README example"
cat > test_uploader.py <<'EOF'
def my_uploader(client, project_id, pages):
    return client.create_chapter(project_id, pages=pages)


def test_my_uploader(cts_client, cts_project, cts_pages, cts_advance, cts_webhooks):
    project = cts_project("Moonlit Harbor", kind="comic", target_languages=["en", "fr"])
    chapter = my_uploader(cts_client, project.id, cts_pages(3))     # your code under test
    cts_advance(3600)                                                # one simulated hour
    assert cts_client.get_chapter(chapter.id).status == "needs_review"
    finished = cts_webhooks.of_type("chapter.finished")
    assert [event["data"]["chapterId"] for event in finished] == [chapter.id]
EOF
"$bin/python" -m pytest -q -p no:cacheprovider test_uploader.py

step "the slim install (docs/pytest-plugin.md) runs the same example, no data stack"
"${uv[@]}" venv -q --python "$python" "$work/slim"
"${uv[@]}" pip install -q --python "$work/slim/bin/python" --no-deps "${wheel[0]}"
"${uv[@]}" pip install -q --python "$work/slim/bin/python" \
  httpx starlette uvicorn python-multipart pillow tqdm pytest
for absent in pandas pyarrow duckdb deltalake matplotlib ipywidgets; do
  if "$work/slim/bin/python" -c "import $absent" 2>/dev/null; then
    echo "the slim install holds $absent" >&2; exit 1
  fi
done
"$work/slim/bin/python" -m pytest -q -p no:cacheprovider test_uploader.py

step "pip install of the checkout itself (the README's advice, not editable), a clean venv"
# pip builds the checkout in place, as a user's `pip install path/to/checkout` does.
"$python" -m venv "$work/from-checkout"
"$work/from-checkout/bin/python" -m pip install -q "$checkout"
mkdir "$work/checkout-user"
cd "$work/checkout-user"
"$work/from-checkout/bin/python" -c "import toolkit; assert '$checkout' not in toolkit.__file__"
"$work/from-checkout/bin/toolkit" demo --hours 2 --out demo
test -s demo/weekly-report.html

step "done: the demo took ${demo_seconds} s, everything after the install $((SECONDS - started)) s"
