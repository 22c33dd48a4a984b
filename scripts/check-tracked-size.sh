#!/usr/bin/env bash
# Fails when git tracks a file over 1 MiB: built binaries and generated
# artefacts stay out of the repository (.gitignore lists the usual ones).
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
big=$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk -v l="$limit" '$1 > l {print}')
if [ -n "$big" ]; then
	echo "tracked files over 1 MiB (remove them from the index: git rm --cached FILE):"
	echo "$big"
	exit 1
fi
