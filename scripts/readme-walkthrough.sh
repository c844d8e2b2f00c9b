#!/usr/bin/env bash
# Runs a walk-through of README.md exactly as written: the ```sh block that
# follows the line "<!-- walkthrough: NAME -->", with bash -euo pipefail in
# the repository's root, each command echoed as it is read. CI runs the curl walk-through
# against `make run` this way, so the README cannot rot.
#
#   scripts/readme-walkthrough.sh curl|tacker [README]
#
# WALKTHROUGH_ENDPOINT (e.g. http://127.0.0.1:19890) replaces the README's
# http://127.0.0.1:9890, for a `make run` on another VNFM_LISTEN.
set -euo pipefail

name="${1:?usage: $0 curl|tacker [README]}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readme="${2:-$root/README.md}"

script="$(awk -v marker="<!-- walkthrough: $name -->" '
	$0 == marker { found = 1; next }
	found && !inblock && /^```sh$/ { inblock = 1; next }
	inblock && /^```$/ { exit }
	inblock { print }
' "$readme")"
if [[ -z $script ]]; then
	echo "readme-walkthrough: no \`\`\`sh block after <!-- walkthrough: $name --> in $readme" >&2
	exit 2
fi
if [[ -n ${WALKTHROUGH_ENDPOINT:-} ]]; then
	script="${script//http:\/\/127.0.0.1:9890/$WALKTHROUGH_ENDPOINT}"
	export VNFM_ENDPOINT_URL="$WALKTHROUGH_ENDPOINT" # make request
fi
file="$(mktemp)"
trap 'rm -f "$file"' EXIT
printf '%s\n' "$script" >"$file"
cd "$root"
echo "==> README walk-through \"$name\""
bash -euo pipefail -v "$file"
