#!/usr/bin/env bash
# prepare.sh: build here (no GPU needed) everything bench/gpu/run.sh needs on
# a lent GPU machine, into one ignored folder, bench/gpu/carry, to name in
# the device tool's `carry`. The GPU machine has no Go toolchain and no
# network, so it gets binaries:
#
#   carry/gelo.tgz   gelo built with -tags xla and cgo (gomlx's XLA backend,
#                    Vulkan), and the test binaries of the GPU parity tests
#                    (go test -c: ./tests, ./lower/gomlx, ./lower/vulkan),
#                    stripped and compressed to fit the 64 MiB carry limit
#   carry/gl/*.deb   the Vulkan loader (libvulkan1) and its EGL/GL siblings,
#                    as the device tool's README asks (the image has the
#                    NVIDIA driver's ICD but no loader)
#   carry/BUILD      the commit and go version the binaries come from
#
# Usage: bench/gpu/prepare.sh            (from anywhere in the checkout)
#        NO_DEBS=1 bench/gpu/prepare.sh  (skip the loader download)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
carry=$root/bench/gpu/carry
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$carry" "$stage/bin"
cd "$root"
export CGO_ENABLED=1
flags=(-tags xla -trimpath -ldflags '-s -w')
echo "building gelo (-tags xla, cgo)"
go build "${flags[@]}" -o "$stage/bin/gelo" ./cmd/gelo
for pkg in ./tests ./lower/gomlx ./lower/vulkan; do
  name=$(echo "${pkg#./}" | tr / _)
  echo "building the test binary of $pkg"
  go test -c "${flags[@]}" -o "$stage/bin/$name.test" "$pkg"
done
tar -C "$stage" -czf "$carry/gelo.tgz" bin
{
  echo "commit $(git rev-parse HEAD)$(git diff --quiet HEAD -- . ':!bench/gpu/carry' || echo ' (with uncommitted changes)')"
  go version
  echo "built $(date -u +%FT%TZ)"
} >"$carry/BUILD"
if [ "${NO_DEBS:-0}" != 1 ]; then
  # The loader debs, for amd64 whatever this machine is (the device
  # tool's README, "Headless rendering").
  mkdir -p "$carry/gl" /tmp/gelo-amd64-lists/partial
  o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/gelo-amd64-lists)
  apt-get "${o[@]}" update -qq
  (cd "$carry/gl" && apt-get "${o[@]}" download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null)
fi
du -sh "$carry"/* | sed 's|'"$root"'/||'
size=$(du -sm "$carry" | cut -f1)
if [ "$size" -gt 60 ]; then
  echo "prepare: $carry is $size MiB; with the tracked tree it must stay under the device tool's 64 MiB" >&2
  exit 1
fi
echo "ready: run with carry [\"bench/gpu/carry\"] and command: bench/gpu/run.sh"
