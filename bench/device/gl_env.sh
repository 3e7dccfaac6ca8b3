# Sourced by the device scripts that run the static eph_tensor_bench
# (tensor.sh, bert.sh): the Vulkan loader and libglvnd unpacked from
# .gl/*.deb, and .gl/lib (the ONNX protobuf classes, which Debian ships as
# shared libraries only; bench/RESULTS.md, "How to run it") on the library path.
BIN=${BIN:-.gl/bin}
export LD_LIBRARY_PATH=$PWD/.gl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
