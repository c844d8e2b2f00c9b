#!/usr/bin/env bash
# Builds the sample VNF packages: zips every samples/<name>/ source tree
# into <outdir>/<name>.zip (default outdir: bin/samples/).
#
# TOSCA-Metadata/TOSCA.meta keeps the tree's first block (TOSCA-Meta-File-
# Version ... Entry-Definitions) and gets one artifact block with the SHA-256
# of every other file. The output is deterministic: entries sorted, dated
# 2020-01-01 00:00 UTC, mode 0644 (0755 for *.sh), no directory entries, no
# extra attributes. internal/vnfpkg.BuildCSAR builds the same content in Go.
#
# Usage: scripts/make-samples.sh [outdir]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/bin/samples}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

export TZ=UTC LC_ALL=C

for tool in zip sha256sum find sort touch; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "make-samples: $tool is required (apt-get install zip coreutils findutils)" >&2
		exit 1
	fi
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# content_type FILE prints the Content-Type written in TOSCA.meta
# (the same mapping as vnfpkg.ContentType).
content_type() {
	local lower="${1,,}"
	case "$lower" in
	*.yaml | *.yml) echo application/x-yaml ;;
	*.sh) echo application/x-sh ;;
	*.py) echo text/x-python ;;
	*.json) echo application/json ;;
	*.txt | *.md) echo text/plain ;;
	*) echo application/octet-stream ;;
	esac
}

meta=TOSCA-Metadata/TOSCA.meta
built=0
for src in "$root"/samples/*/; do
	src="${src%/}"
	name="$(basename "$src")"
	if [[ ! -f "$src/$meta" ]]; then
		continue
	fi
	stage="$tmp/$name"
	mkdir -p "$stage"
	cp -R "$src/." "$stage/"
	(
		cd "$stage"
		files=()
		while IFS= read -r f; do
			files+=("$f")
		done < <(find . -type f ! -path "./$meta" | sed 's|^\./||' | sort)

		# The first block of the source TOSCA.meta, then one block per file.
		awk 'NF == 0 { if (seen) exit; next } { seen = 1; sub(/\r$/, ""); print }' "$meta" >"$tmp/$name.meta"
		for f in "${files[@]}"; do
			hash="$(sha256sum "$f")"
			printf '\nName: %s\nContent-Type: %s\nAlgorithm: SHA-256\nHash: %s\n' \
				"$f" "$(content_type "$f")" "${hash%% *}" >>"$tmp/$name.meta"
		done
		mv "$tmp/$name.meta" "$meta"

		find . -type f -exec chmod 0644 {} +
		find . -type f -name '*.sh' -exec chmod 0755 {} +
		find . -exec touch -h -d '2020-01-01 00:00:00' {} +

		rm -f "$out/$name.zip"
		printf '%s\n' "${files[@]}" "$meta" | sort | zip -q -X -D -9 "$out/$name.zip" -@
	)
	echo "make-samples: $out/$name.zip"
	built=$((built + 1))
done

if ((built == 0)); then
	echo "make-samples: no package trees (samples/<name>/$meta) under $root/samples" >&2
	exit 1
fi
