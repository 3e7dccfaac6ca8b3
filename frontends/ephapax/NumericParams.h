// Numeric generics (docs/ephapax.md, "Numeric generics"): arithmetic,
// comparison, `min`/`max`/`abs`, casts and integer literals may use a type
// parameter; each such use makes the parameter *numeric*, and every use of
// the generic function must then instantiate it with I32, I64, U32, F32 or
// F64. The checker tells this class what it sees while checking bodies; once
// every function is checked, report() propagates requirements through
// generic callers (a T passed on to a function that needs it numeric is
// numeric too) and reports each instantiation with another type as E109 at
// the use, naming the type argument and the operator that needs a number.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontends/ephapax/Diag.h"
#include "frontends/ephapax/Types.h"

namespace eph::ephapax {

class NumericParams {
 public:
  // `sources` names the files of spans (the program's own, or a library's).
  explicit NumericParams(const DiagSink& sources) : sources_(sources) {}
  // `param` (a type parameter of the function being checked) is used by `op`
  // (e.g. "`*`") at `at`. The first use is the one reported.
  void require(Ty* param, const std::string& op, Span at);
  // The generic function `fn` (whose type parameters are `params`) is used at
  // `site` with type arguments `args` (still being inferred).
  void instantiated(const std::string& fn, const std::vector<Ty*>& params, const std::vector<Ty*>& args, Span site);
  // After every function is checked: E109 for each use that instantiates a
  // numeric parameter with another type. Returns the numeric parameters' ids.
  std::set<int> report(TyArena& T, DiagSink& diags);

 private:
  struct Need {
    std::string why;  // "`*` at 2:5 needs T to be a number", or "it passes T to `g` at 4:1, where .."
  };
  struct Site {
    std::string fn;
    std::vector<Ty*> params, args;
    Span at;
  };
  // "line:col", or "gpu.eph:line:col" in a library module.
  std::string where(Span s) const;

  const DiagSink& sources_;
  std::map<int, Need> needs_;  // by Param id
  std::vector<Site> sites_;
};

}  // namespace eph::ephapax
