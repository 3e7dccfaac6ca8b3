// Every kernel in examples/ir goes through the SPIR-V emitter and validator,
// for each built-in caps profile that can run it.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/unit/SpirvTestUtil.h"

namespace eph::test {
namespace {

class SpirvExamplesTest : public SpirvTest {};

TEST_F(SpirvExamplesTest, EveryExampleKernelValidates) {
  unsigned kernels = 0;
  for (const auto& entry : std::filesystem::directory_iterator(EPH_SOURCE_DIR "/examples/ir")) {
    if (entry.path().extension() != ".eir") continue;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    ir::Module* m = load(ss.str());
    ASSERT_NE(m, nullptr) << entry.path();
    for (const auto& f : m->functions()) {
      if (!f->isKernel()) continue;
      ++kernels;
      for (std::string_view profile : {"lavapipe", "nvidia", "minimal"}) {
        auto words = emit(f->name(), caps(profile));
        ASSERT_TRUE(bool(words)) << entry.path() << " @" << f->name() << " (" << profile
                                 << "): " << words.error().str();
        EXPECT_GT(words->size(), 5u);
        EXPECT_EQ((*words)[0], 0x07230203u);
      }
    }
  }
  EXPECT_GE(kernels, 3u);  // saxpy, reduce, histogram
}

TEST_F(SpirvExamplesTest, SaxpyInterface) {
  std::ifstream in(EPH_SOURCE_DIR "/examples/ir/saxpy.eir");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = asmOf(ss.str(), "saxpy");
  // Entry point, workgroup size, two storage buffers at bindings 0 and 1, the
  // read-only one NonWritable, and the scalar in a push-constant block.
  EXPECT_NE(text.find("OpEntryPoint GLCompute %saxpy \"saxpy\""), std::string::npos) << text;
  EXPECT_NE(text.find("OpExecutionMode %saxpy LocalSize 64 1 1"), std::string::npos) << text;
  EXPECT_NE(text.find("OpDecorate %x Binding 0"), std::string::npos) << text;
  EXPECT_NE(text.find("OpDecorate %y Binding 1"), std::string::npos) << text;
  EXPECT_NE(text.find("OpDecorate %x NonWritable"), std::string::npos) << text;
  EXPECT_EQ(text.find("OpDecorate %y NonWritable"), std::string::npos) << text;
  EXPECT_NE(text.find("PushConstant"), std::string::npos) << text;
  EXPECT_NE(text.find("OpArrayLength"), std::string::npos) << text;
  EXPECT_NE(text.find("ArrayStride 4"), std::string::npos) << text;
}

}  // namespace
}  // namespace eph::test
