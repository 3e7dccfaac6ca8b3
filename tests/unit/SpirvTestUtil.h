// Helpers for the SPIR-V target tests: parse .eir text, emit one kernel for a
// built-in caps profile, and look at the result (validated words, the
// disassembly, or the error).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "targets/spirv/CapsProfiles.h"
#include "targets/spirv/Spirv.h"

namespace eph::test {

class SpirvTest : public ::testing::Test {
 protected:
  ir::Module* load(std::string_view text) {
    auto m = ir::parseModule(ctx_, text, "test.eir");
    if (!m) {
      ADD_FAILURE() << "parse error: " << m.error().str() << "\n" << text;
      return nullptr;
    }
    Status s = ir::verify(**m);
    if (!s) ADD_FAILURE() << "verify error: " << s.error().str() << "\n" << text;
    modules_.push_back(std::move(*m));
    return modules_.back().get();
  }

  static DeviceCaps caps(std::string_view profile = "lavapipe") { return *spirv::capsProfile(profile); }

  // Emits @kernel of the last loaded module; the words have passed the
  // validator inside emitKernel (and pass it again here, to be sure).
  Expected<std::vector<uint32_t>> emit(std::string_view kernel, const DeviceCaps& c) {
    const ir::Function* f = modules_.back()->lookup(kernel);
    if (!f) return Error{{}, "no function @" + std::string(kernel)};
    auto words = spirv::emitKernel(*f, c);
    if (words) {
      Status again = spirv::validate(*words, c.vulkanApiVersion, "kernel @" + std::string(kernel));
      if (!again) return again.error();
    }
    return words;
  }

  // The disassembly of a kernel that must emit cleanly ("" after a failure).
  std::string asmOf(std::string_view text, std::string_view kernel = "k",
                    std::string_view profile = "lavapipe") {
    if (!load(text)) return "";
    auto words = emit(kernel, caps(profile));
    if (!words) {
      ADD_FAILURE() << words.error().str() << "\n" << text;
      return "";
    }
    return spirv::disassemble(*words);
  }

  // The error message of a kernel that must fail to emit ("" if it emitted).
  std::string errorOf(std::string_view text, std::string_view kernel, const DeviceCaps& c) {
    if (!load(text)) return "";
    auto words = emit(kernel, c);
    if (words) {
      ADD_FAILURE() << "expected an error, but @" << kernel << " emitted";
      return "";
    }
    return words.error().str();
  }

  ir::Context ctx_;
  std::vector<std::unique_ptr<ir::Module>> modules_;
};

}  // namespace eph::test
