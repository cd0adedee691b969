#!/usr/bin/env bash
# Prints the Dockerfile's metadata build arguments for this checkout, one --build-arg per line:
# VERSION (CMakeLists.txt's project version), REVISION (the git commit) and SOURCE_URL (the origin
# remote as https, else GPUBENCH_SOURCE_URL or the project's URL). They become the images' OCI
# labels and the binaries' revision (.git is not in the build context).
#   docker build $(scripts/image_build_args.sh) -t gpubench:0.1.0 .
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n 's/^project(gpubench VERSION \([0-9][0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || { echo "image_build_args.sh: no project version in CMakeLists.txt" >&2; exit 1; }
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
source_url=${GPUBENCH_SOURCE_URL:-}
if [ -z "$source_url" ] && remote=$(git remote get-url origin 2>/dev/null); then
  # git@host:owner/repo(.git) and https://host/owner/repo(.git) both become https://host/owner/repo.
  source_url=$(printf '%s' "$remote" | sed -E 's#^git@([^:]+):#https://\1/#; s#^ssh://git@#https://#; s#\.git$##')
fi
source_url=${source_url:-https://github.com/gpubench/gpubench}
printf -- '--build-arg=%s\n' "VERSION=$version" "REVISION=$revision" "SOURCE_URL=$source_url"
