#!/usr/bin/env bats
# Tests of scripts/fuzz.sh with a fake go command ($GO): which fuzz targets it
# runs, and that only Go 1.26's bare -fuzztime deadline (go.dev/issue/75804)
# earns a second run. The fake prints what `go test -fuzz` prints in each case;
# nothing is compiled or fuzzed. Run: bats test/bats

SCRIPT="$BATS_TEST_DIRNAME/../../scripts/fuzz.sh"

setup() {
	export FAKE_LOG="$BATS_TEST_TMPDIR/calls.log" FAKE_STATE="$BATS_TEST_TMPDIR/state"
	mkdir -p "$FAKE_STATE"
	touch "$FAKE_LOG"
	# FAKE_PLAN_<target>: the outcomes of its runs in order, separated by
	# spaces: pass, race (the coordinator's deadline), crash (a failing input).
	cat >"$BATS_TEST_TMPDIR/go" <<-'EOF2'
		#!/usr/bin/env bash
		name=${5#^}; name=${name%$}
		echo "$name $7" >>"$FAKE_LOG"
		n=$(grep -c "^$name " "$FAKE_LOG")
		plan_var="FAKE_PLAN_$name"
		read -ra plan <<<"${!plan_var:-pass}"
		outcome=${plan[n-1]:-${plan[-1]}}
		echo "fuzz: elapsed: 0s, gathering baseline coverage: 0/10 completed"
		case $outcome in
		pass) echo "PASS"; echo "ok  	example/$name	5.0s" ;;
		race) printf -- '--- FAIL: %s (5.11s)\n    context deadline exceeded\nFAIL\nexit status 1\n' "$name"; exit 1 ;;
		crash) printf -- '--- FAIL: %s (0.10s)\n    --- FAIL: %s (0.00s)\n        f_test.go:6: bad "z000"\n    \n    Failing input written to testdata/fuzz/%s/31\n    context deadline exceeded\nFAIL\n' "$name" "$name" "$name"; exit 1 ;;
		esac
	EOF2
	chmod +x "$BATS_TEST_TMPDIR/go"
	export GO="$BATS_TEST_TMPDIR/go"
	TARGETS=$(cd "$BATS_TEST_DIRNAME/../.." && grep -rEo --include='*_test.go' --exclude-dir=.git '^func Fuzz[A-Za-z0-9_]+' . | sed 's/.*func //' | sort)
}

@test "every fuzz target of the repository runs once, for the given time" {
	run "$SCRIPT" 3s
	[ "$status" -eq 0 ]
	[ "$(wc -l <"$FAKE_LOG")" -eq "$(wc -l <<<"$TARGETS")" ]
	[ "$(wc -l <<<"$TARGETS")" -ge 6 ]
	for t in $TARGETS; do grep -qx "$t 3s" "$FAKE_LOG"; done
}

@test "the default fuzz time is 10s" {
	run "$SCRIPT"
	[ "$status" -eq 0 ]
	grep -qx "FuzzParse 10s" "$FAKE_LOG"
}

@test "a bare deadline from Go's coordinator runs the target once more, and the others go on" {
	export FAKE_PLAN_FuzzParse="race pass"
	run "$SCRIPT" 1s
	[ "$status" -eq 0 ]
	[ "$(grep -c '^FuzzParse ' "$FAKE_LOG")" -eq 2 ]
	[[ $output == *"FuzzParse stopped on Go's -fuzztime race (go.dev/issue/75804)"* ]]
	[ "$(wc -l <"$FAKE_LOG")" -eq "$(($(wc -l <<<"$TARGETS") + 1))" ]
}

@test "the same deadline twice fails, and no later target runs" {
	export FAKE_PLAN_FuzzAppendMasked="race race"
	run "$SCRIPT" 1s
	[ "$status" -eq 1 ]
	[ "$(grep -c '^FuzzAppendMasked ' "$FAKE_LOG")" -eq 2 ]
	[[ $output == *"FuzzAppendMasked failed"* ]]
	! grep -q '^FuzzParse ' "$FAKE_LOG"
}

@test "a failing input is never run again, even with the deadline in its output" {
	export FAKE_PLAN_FuzzParse="crash pass"
	run "$SCRIPT" 1s
	[ "$status" -eq 1 ]
	[ "$(grep -c '^FuzzParse ' "$FAKE_LOG")" -eq 1 ]
	[[ $output == *"Failing input written to testdata/fuzz/FuzzParse/31"* ]]
	[[ $output != *"running it again"* ]]
}
