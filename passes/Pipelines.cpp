// Named pipelines: what `--passes=NAME` stands for. `default` is what
// `ephc run`, `lower` and `diff` run when no --passes is given, so every run
// goes through the IR linearity check (a module that leaks or uses a buffer
// twice is reported before it runs, whatever produced it).
#include "passes/PassManager.h"

namespace eph::passes {

const std::vector<NamedPipeline>& namedPipelines() {
  static const std::vector<NamedPipeline> pipelines = {
      {"default", "linearity", "what run, lower and diff run unless --passes is given"},
      {"none", "", "no passes at all"},
      {"optimize", "canonicalize,cse,dce", "the scalar clean-ups"},
      {"O2", "linearity,fuse,vectorize,memplan,linearity",
       "default, then fusion of pointwise kernels, vector memory access, memory planning (device buffers share arenas), checked again"},
  };
  return pipelines;
}

const NamedPipeline* lookupPipeline(std::string_view name) {
  for (const NamedPipeline& p : namedPipelines())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace eph::passes
