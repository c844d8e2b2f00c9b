#!/usr/bin/env bash
# Runs every `go test -fuzz` target of the repository for FUZZTIME each
# (first argument, default 10s; `make fuzz`, `make test`). $GO is the go
# command (default go).
#
# Go 1.26's fuzzing coordinator can fail a target with a bare "context
# deadline exceeded" when -fuzztime ends while a worker is still on an input
# (go.dev/issue/75804, fixed in Go 1.27). Such a run found nothing: it wrote no
# failing input. A target that stops that way is run once more; a second such
# stop, or any failure that wrote an input or said anything else, fails.
set -euo pipefail

fuzztime=${1:-10s}
go=${GO:-go}
cd "$(dirname "$0")/.."

targets=$(grep -rEo --include='*_test.go' --exclude-dir=.git '^func Fuzz[A-Za-z0-9_]+' . | sort)
if [ -z "$targets" ]; then
	echo "fuzz.sh: no func Fuzz... found under $PWD" >&2
	exit 1
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# coordinator_race: the run's only complaint is the coordinator's deadline.
coordinator_race() {
	grep -q '^    context deadline exceeded$' "$log" &&
		! grep -q -e 'Failing input written' -e '^panic:' -e '^    --- FAIL' -e '^        ' "$log"
}

while IFS=: read -r file decl; do
	dir=$(dirname "$file")
	name=${decl#func }
	for attempt in 1 2; do
		echo "go test -run '^\$' -fuzz '^$name\$' -fuzztime $fuzztime $dir"
		if "$go" test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" "$dir" 2>&1 | tee "$log"; then
			break
		fi
		if [ "$attempt" = 1 ] && coordinator_race; then
			echo "fuzz.sh: $name stopped on Go's -fuzztime race (go.dev/issue/75804) and wrote no failing input; running it again"
			continue
		fi
		echo "fuzz.sh: $name failed" >&2
		exit 1
	done
done <<<"$targets"
