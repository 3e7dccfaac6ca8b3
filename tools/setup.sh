#!/bin/sh
# Installs the Debian 12 packages ephc needs to build and test, only when some
# are missing (and runs `apt-get update` only then). Safe to run every time.
# Used by the README's two commands and by .ci/run.
set -eu

PACKAGES="cmake ninja-build g++ libgtest-dev googletest libbenchmark-dev libfmt-dev
llvm-19-dev llvm-19-tools libopenblas-dev python3
libvulkan-dev mesa-vulkan-drivers spirv-tools spirv-headers vulkan-validationlayers
clang-14 libclang-rt-14-dev ccache libeigen3-dev
libonnx-dev libonnx-testdata libprotobuf-dev python3-numpy python3-torch libceres-dev chromium"

missing=""
for p in $PACKAGES; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "ephc setup: installing$missing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "ephc setup: need root (or sudo) to install$missing" >&2; exit 1; }
  SUDO=sudo
fi
$SUDO apt-get update
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $missing
