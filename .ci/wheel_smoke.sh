#!/usr/bin/env bash
# Packaging smoke test: build a wheel and an sdist, install the wheel (not editable) in a
# fresh virtual environment outside the checkout, and use it as a new user would: a CLI
# search of the bundled corpus, a server answering a search, and the Python example of
# docs/python.md. The generic top-level names `search` and `api` must not be importable.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
server_pid=""
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; "$work/venv/bin/newsquarry" daemon stop >/dev/null 2>&1; rm -rf "$work"' EXIT

python -m build --outdir "$work/dist" "$repo" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
tar tzf "$work"/dist/newsquarry-*.tar.gz >"$work/sdist.txt"
grep -q 'corpus/000_e23b3335c9472580.txt' "$work/sdist.txt"
python -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$work"/dist/newsquarry-*.whl
cd "$work"
mkdir -m 700 "$work/run"  # the resident searcher's socket folder, this script's own
export XDG_DATA_HOME="$work/data" XDG_RUNTIME_DIR="$work/run" PYTHONDONTWRITEBYTECODE=1
unset NEWSQUARRY_INDEX NEWSQUARRY_URL NEWSQUARRY_DAEMON
unset PYTHONPATH

"$work/venv/bin/newsquarry" search torture -n 1 --json >"$work/search.json"
grep -q "\"total\"" "$work/search.json"
# the first search started the resident searcher; the next one is answered by it, alike.
# (The status is read whole before grep looks at it: `status | grep -q` under pipefail fails
# when grep exits before the status has written its last line, a broken pipe.)
for _ in $(seq 120); do
    status="$("$work/venv/bin/newsquarry" daemon status || true)"
    if grep -q "/data/newsquarry/index" <<<"$status"; then break; fi
    sleep 0.5
done
"$work/venv/bin/newsquarry" search torture -n 1 --json >"$work/search2.json"
status="$("$work/venv/bin/newsquarry" daemon status)"
grep -q "1 command served" <<<"$status" \
    || { echo "$status"; cat "$work"/run/newsquarry/*.log; exit 1; }
diff <(grep -v took_ms "$work/search.json") <(grep -v took_ms "$work/search2.json")
if "$work/venv/bin/python" -c 'import search' 2>/dev/null; then echo "top-level 'search' importable"; exit 1; fi
if "$work/venv/bin/python" -c 'import api' 2>/dev/null; then echo "top-level 'api' importable"; exit 1; fi

# the Python example of docs/python.md prints what the doc says it prints
"$work/venv/bin/python" - "$repo/docs/python.md" <<'PY'
import re, subprocess, sys
doc = open(sys.argv[1]).read()
code = re.findall(r"```python\n(.*?)```", doc, re.S)[0]
expected = re.findall(r"```text\n(.*?)```", doc, re.S)[0]
out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
assert out == expected, out
PY

port="$("$work/venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$work/venv/bin/newsquarry" serve --port "$port" --workers 1 >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 120); do
    if "$work/venv/bin/python" - "$port" <<'PY' 2>/dev/null; then break; fi
import json, sys, urllib.request
body = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/v1/search?q=torture", timeout=5))
assert body["total"] > 0
PY
    sleep 1
done
"$work/venv/bin/python" - "$port" <<'PY' || { cat "$work/serve.log"; exit 1; }
import json, sys, urllib.request
body = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/v1/search?q=torture", timeout=5))
assert body["total"] > 0, body
PY
echo "wheel smoke test: passed"
