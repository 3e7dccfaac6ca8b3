// In-process validation and disassembly with spirv-tools.
//
// Layout: storage buffers and push constants use ir/Layout.h, which is std430
// with vec3 padded to 16 bytes. Every offset it produces satisfies the std430
// alignment rules that spirv-val checks for Vulkan by default (it is only ever
// larger than std430's tight packing), so no relaxed or scalar block layout
// option is set: a layout bug shows up as a validation failure.
#include <spirv-tools/libspirv.hpp>

#include "targets/spirv/Spirv.h"
#include "targets/spirv/SpirvEnv.h"

namespace eph::spirv {

spv_target_env targetEnv(uint32_t vulkanApiVersion) {
  uint32_t major = vulkanApiVersion >> 22 & 0x7f, minor = vulkanApiVersion >> 12 & 0x3ff;
  if (vulkanApiVersion == 0 || major > 1 || minor >= 3) return SPV_ENV_VULKAN_1_3;
  if (minor == 2) return SPV_ENV_VULKAN_1_2;
  return SPV_ENV_VULKAN_1_1;
}

uint32_t spirvVersionFor(uint32_t vulkanApiVersion) {
  switch (targetEnv(vulkanApiVersion)) {
    case SPV_ENV_VULKAN_1_3: return 0x00010600;
    case SPV_ENV_VULKAN_1_2: return 0x00010500;
    default: return 0x00010300;
  }
}

Status validate(std::span<const uint32_t> words, uint32_t vulkanApiVersion, const std::string& what) {
  spvtools::SpirvTools tools(targetEnv(vulkanApiVersion));
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& pos,
                               const char* message) {
    if (!messages.empty()) messages += "; ";
    messages += message;
    (void)pos;
  });
  spvtools::ValidatorOptions options;
  if (tools.Validate(words.data(), words.size(), options)) return Status::ok();
  if (messages.empty()) messages = "the validator rejected the module";
  return Error{{}, "internal error: SPIR-V for " + what + " failed validation: " + messages};
}

bool validatorKnowsCoopMatrixKhr() {
  static const bool known = [] {
    // A header and OpCapability CooperativeMatrixKHR (6022): the parser
    // rejects a capability it does not know.
    std::vector<uint32_t> words = {0x07230203, 0x00010600, 0, 1, 0, (2u << 16) | 17u /* OpCapability */,
                                   6022};
    spvtools::SpirvTools tools(SPV_ENV_UNIVERSAL_1_6);
    tools.SetMessageConsumer([](spv_message_level_t, const char*, const spv_position_t&, const char*) {});
    std::string text;
    return tools.Disassemble(words, &text, SPV_BINARY_TO_TEXT_OPTION_NONE);
  }();
  return known;
}

std::string disassemble(std::span<const uint32_t> words) {
  spvtools::SpirvTools tools(SPV_ENV_UNIVERSAL_1_6);
  std::string text;
  std::vector<uint32_t> copy(words.begin(), words.end());
  if (!tools.Disassemble(copy, &text,
                         SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT))
    return validatorKnowsCoopMatrixKhr()
               ? "; (the module could not be disassembled)\n"
               : "; (the module could not be disassembled: this build's spirv-tools predates instructions it uses, "
                 "such as SPV_KHR_cooperative_matrix's; --emit=spirv writes the binary)\n";
  return text;
}

}  // namespace eph::spirv
