#!/usr/bin/env bash
# Builds the binaries of the e2e rig (kube-apiserver, kubectl, velero, fakes3, the upstream
# velero-plugin-for-aws) from the Go module proxy into a cache directory keyed by their versions
# and by the tools modules' go.mod/go.sum/sources. Binaries already built are skipped.
# The last line of stdout is the directory holding the binaries.
#
# E2E_VELERO_VERSION picks the Velero version (default v1.18.3). Each Velero minor version has its
# own dependency graph, so each has its own module for the velero binary (go.mod/go.sum pinning
# that exact version, with that version's own replace directives), and its own upstream
# velero-plugin-for-aws (the one the upstream compatibility table pairs with it):
#   v1.18.x  module tools (as cmd/velero)     velero-plugin-for-aws v1.14.3
#   v1.17.x  module tools/velero-v1.17        velero-plugin-for-aws v1.13.2
# fakes3 (module tools), kube-apiserver (module tools/kube) and kubectl (module tools/kubectl) are the
# same for every version.
# E2E_AWS_PLUGIN_VERSION overrides the upstream plugin's version (it is part of the cache key).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
KUBE_VERSION=v1.34.4
VELERO_VERSION=${E2E_VELERO_VERSION:-v1.18.3}
# The upstream plugin of the default Velero version, whose cache directory the others share.
DEFAULT_AWS_PLUGIN_VERSION=v1.14.3

case "$VELERO_VERSION" in
v1.18.*)
	AWS_PLUGIN_VERSION=$DEFAULT_AWS_PLUGIN_VERSION
	velero_dir=$here/tools velero_pkg=./cmd/velero
	;;
v1.17.*)
	AWS_PLUGIN_VERSION=v1.13.2
	velero_dir=$here/tools/velero-v1.17 velero_pkg=.
	;;
*)
	echo "build-tools: Velero $VELERO_VERSION is not supported (v1.18.x, v1.17.x)" >&2
	exit 1
	;;
esac
AWS_PLUGIN_VERSION=${E2E_AWS_PLUGIN_VERSION:-$AWS_PLUGIN_VERSION}
if ! grep -q "^[[:space:]]*github.com/vmware-tanzu/velero ${VELERO_VERSION}\$" "$velero_dir/go.mod"; then
	echo "build-tools: $velero_dir/go.mod does not require github.com/vmware-tanzu/velero ${VELERO_VERSION}" \
		"(update it: go get github.com/vmware-tanzu/velero@${VELERO_VERSION}, then that version's replace directives)" >&2
	exit 1
fi

hash=$(cd "$here/tools" && cat go.mod go.sum cmd/*/*.go kube/go.mod kube/go.sum kube/*.go | sha256sum | cut -c1-12)
cache=${E2E_CACHE:-$HOME/.cache/velero-async-e2e}
shared=
if [[ "$velero_dir" != "$here/tools" ]]; then
	# fakes3 and kube-apiserver come from the same sources as the default version's: reuse them
	# from its cache directory when they are there.
	shared="$cache/k8s-${KUBE_VERSION}_velero-v1.18.3_aws-${DEFAULT_AWS_PLUGIN_VERSION}_${hash}/bin"
	hash=$( (echo "$hash" && cd "$velero_dir" && cat go.mod go.sum ./*.go) | sha256sum | cut -c1-12)
fi
key="k8s-${KUBE_VERSION}_velero-${VELERO_VERSION}_aws-${AWS_PLUGIN_VERSION}_${hash}"
bin="$cache/$key/bin"
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
	if [[ -n "$shared" && "$name" != velero && -x "$shared/$name" ]]; then
		cp "$shared/$name" "$bin/.$name.tmp"
		mv "$bin/.$name.tmp" "$bin/$name"
		echo "build-tools: $name copied from $shared" >&2
		return
	fi
	echo "build-tools: building $name ..." >&2
	local start=$SECONDS
	(cd "$dir" && $NICE go build "$@" -o "$bin/.$name.tmp" "$pkg")
	mv "$bin/.$name.tmp" "$bin/$name"
	echo "build-tools: built $name in $((SECONDS - start))s" >&2
}

build fakes3 "$here/tools" ./cmd/fakes3
build velero "$velero_dir" "$velero_pkg" \
	-ldflags "-X github.com/vmware-tanzu/velero/pkg/buildinfo.Version=${VELERO_VERSION}"
build kube-apiserver "$here/tools/kube" .
# kubectl of the same Kubernetes release (module tools/kubectl), for the README's kubectl commands
# run as written. It has its own cache directory, keyed by its module alone, so that adding or
# changing it rebuilds nothing else; $bin/kubectl links to it.
kubectl_hash=$(cd "$here/tools/kubectl" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-12)
kubectl_bin="$cache/kubectl-${KUBE_VERSION}_${kubectl_hash}/bin"
mkdir -p "$kubectl_bin"
(bin=$kubectl_bin shared= && build kubectl "$here/tools/kubectl" .)
ln -sfn "$kubectl_bin/kubectl" "$bin/kubectl"

if [[ ! -x "$bin/velero-plugin-for-aws" && -n "$shared" && "$AWS_PLUGIN_VERSION" == "$DEFAULT_AWS_PLUGIN_VERSION" && -x "$shared/velero-plugin-for-aws" ]]; then
	# The same version as the default Velero version's: its binary, built from the same module.
	cp "$shared/velero-plugin-for-aws" "$bin/.velero-plugin-for-aws.tmp"
	mv "$bin/.velero-plugin-for-aws.tmp" "$bin/velero-plugin-for-aws"
	echo "build-tools: velero-plugin-for-aws ${AWS_PLUGIN_VERSION} copied from $shared" >&2
elif [[ ! -x "$bin/velero-plugin-for-aws" ]]; then
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
