#!/usr/bin/env bash
# Builds the binaries of the e2e rig (kube-apiserver, velero, fakes3, the upstream
# velero-plugin-for-aws) from the Go module proxy into a cache directory keyed by their versions
# and by the tools modules' go.mod/go.sum/sources. Binaries already built are skipped.
# The last line of stdout is the directory holding the binaries.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
KUBE_VERSION=v1.34.4
VELERO_VERSION=v1.18.3
AWS_PLUGIN_VERSION=v1.14.3

hash=$(cd "$here/tools" && cat go.mod go.sum cmd/*/*.go kube/go.mod kube/go.sum kube/*.go | sha256sum | cut -c1-12)
key="k8s-${KUBE_VERSION}_velero-${VELERO_VERSION}_aws-${AWS_PLUGIN_VERSION}_${hash}"
bin="${E2E_CACHE:-$HOME/.cache/velero-async-e2e}/$key/bin"
mkdir -p "$bin"

export GOWORK=off GOFLAGS=-mod=readonly
NICE="nice -n ${E2E_NICE:-10}"

# build NAME DIR PKG [FLAGS...]: runs "go build FLAGS -o TMP PKG" in DIR unless $bin/NAME exists.
build() {
	local name=$1 dir=$2 pkg=$3
	shift 3
	if [[ -x "$bin/$name" ]]; then
		echo "build-tools: $name cached" >&2
		return
	fi
	echo "build-tools: building $name ..." >&2
	local start=$SECONDS
	(cd "$dir" && $NICE go build "$@" -o "$bin/.$name.tmp" "$pkg")
	mv "$bin/.$name.tmp" "$bin/$name"
	echo "build-tools: built $name in $((SECONDS - start))s" >&2
}

build fakes3 "$here/tools" ./cmd/fakes3
build velero "$here/tools" ./cmd/velero \
	-ldflags "-X github.com/vmware-tanzu/velero/pkg/buildinfo.Version=${VELERO_VERSION}"
build kube-apiserver "$here/tools/kube" .

if [[ ! -x "$bin/velero-plugin-for-aws" ]]; then
	echo "build-tools: building velero-plugin-for-aws ${AWS_PLUGIN_VERSION} ..." >&2
	start=$SECONDS
	tmp=$(mktemp -d)
	(cd "$tmp" && GOFLAGS= GOBIN="$tmp" $NICE go install \
		"github.com/vmware-tanzu/velero-plugin-for-aws/velero-plugin-for-aws@${AWS_PLUGIN_VERSION}")
	mv "$tmp/velero-plugin-for-aws" "$bin/velero-plugin-for-aws"
	rmdir "$tmp"
	echo "build-tools: built velero-plugin-for-aws in $((SECONDS - start))s" >&2
else
	echo "build-tools: velero-plugin-for-aws cached" >&2
fi

echo "$bin"
