// Built-in DeviceCaps profiles, so SPIR-V can be emitted and tested for a
// kind of device without having one: `ephc lower --device-caps=NAME` and the
// unit tests use them. The runtime fills real DeviceCaps from the driver.
//
// - lavapipe: Mesa's CPU driver (what CI runs): f64/i64/i8/i16/f16, native
//   float32 atomic add, no float64 atomic add, Vulkan 1.3.
// - nvidia: a current NVIDIA GPU: everything, float32 and float64 atomic add.
// - minimal: Vulkan 1.1 with only what every device has: no 64-, 16- or 8-bit
//   types, no subgroup collectives, no float or 64-bit atomics, 128 invocations per workgroup.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ir/DeviceCaps.h"

namespace eph::spirv {

std::optional<DeviceCaps> capsProfile(std::string_view name);
// "lavapipe, nvidia, minimal"
std::string capsProfileNames();

}  // namespace eph::spirv
