#!/usr/bin/env bash
# walk.sh [REV]: the walk of one order's request through placement.Service.Place at revision REV (default
# HEAD): every function of the module is traced (instrument/ adds a deferred walktrace.Enter to each), one new
# key is placed through the order API on the embedded stores (walk_test.go.txt: admitted at once, reserved),
# and analyze.py prints each change of source file on the request's goroutine and on the work it hands off and
# waits for, then the distinct files and the returns to a file already left.
set -euo pipefail
rev=${1:-HEAD}
root=$(git rev-parse --show-toplevel)
here=$root/scripts/walk
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
git -C "$root" archive "$rev" | tar -x -C "$dir"
mkdir -p "$dir/internal/walktrace"
cp "$here/walktrace.go.txt" "$dir/internal/walktrace/walktrace.go"
(cd "$here" && go run ./instrument "$dir")
cp "$here/walk_test.go.txt" "$dir/internal/api/walk_test.go"
(cd "$dir" && WALK_OUT="$dir/walk.events" go test -count=1 ./internal/api -run '^TestWalk$' >/dev/null)
python3 "$here/analyze.py" "$dir/walk.events"
