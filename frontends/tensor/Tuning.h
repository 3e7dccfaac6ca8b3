// Per-device sizes for the tensor lowering (issue 14): each row names a
// device (a part of its DeviceCaps::name) and the LowerOptions sizes that
// ran fastest there, as bench/tensor/tune.sh measured them; the row says
// when and on what. tensor::run applies the row of the device it runs on
// (LowerOptions::tune); `ephc run` of an ONNX model lowers before it opens
// a device and uses LowerOptions' defaults (the H200's row, but split K
// off: LowerOptions::matmulSplitGroups 0).
//
//   LowerOptions o = tensor::tunedFor(dev->caps().name);
#pragma once

#include <span>
#include <string_view>

#include "frontends/tensor/Lower.h"
#include "ir/DeviceCaps.h"

namespace eph::tensor {

struct TuningRow {
  const char* device;          // occurs in DeviceCaps::name
  unsigned workgroupSize;      // LowerOptions::workgroupSize
  unsigned rowElements;        // LowerOptions::rowElements
  unsigned matmulBlock;        // LowerOptions::matmulBlock
  unsigned elements;           // LowerOptions::elementsPerInvocation
  const char* measured;        // when, and with which sweep
  unsigned matmulSplitGroups = 0;  // LowerOptions::matmulSplitGroups
  unsigned matmulLanes = 0;        // LowerOptions::matmulLanes (0: off)
  unsigned matmulRows = 6;         // LowerOptions::matmulRows
  unsigned matmulUnroll = 4;       // LowerOptions::matmulUnroll
  bool rowShuffles = true;         // LowerOptions::rowShuffles
};
std::span<const TuningRow> tuningTable();

// `base` with the sizes of the first row whose device occurs in
// `deviceName`; unchanged when none does.
LowerOptions tunedFor(std::string_view deviceName, LowerOptions base = {});
// The same for the device `caps` describes, with what its capabilities
// decide: cooperative-matrix f16 matmul where it runs 16x16x16 f16 products
// into f32 (LowerOptions::coopMatrixSubgroup), and at workgroup scope where
// it runs the coopTile products in workgroups of 256 or 128 invocations
// (LowerOptions::coopMatrixWorkgroup).
LowerOptions tunedFor(const DeviceCaps& caps, LowerOptions base = {});

}  // namespace eph::tensor
