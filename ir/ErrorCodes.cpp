// The codes of the IR's diagnostics, with a one-line meaning each: I… the IR
// text parser (ir/Parser.cpp), V… the verifier (ir/Verifier.cpp), L… the
// linearity pass, P… the other passes (passes/: P001-P006 monomorphize,
// P007-P013 autodiff). docs/errors.md has an example of each; ErrorCodesTest
// keeps this table, the sources and the doc in step.
#include "ir/Diagnostics.h"

namespace eph {

const std::vector<ErrorCodeInfo>& irErrorCodes() {
  static const std::vector<ErrorCodeInfo> codes = {
      {"I001", "IR syntax error: an unexpected token or character"},
      {"I002", "an integer or float literal that is invalid or out of range"},
      {"I003", "unknown type or op name"},
      {"I004", "use of an undefined value"},
      {"I005", "a value, function or attribute defined twice"},
      {"I006", "an op written with the wrong number of operands, results or regions"},
      {"I007", "nesting deeper than the parser's limit"},
      {"I008", "an invalid type or function header (vector size, workgroup size on a non-kernel)"},
      {"V001", "a function body's arguments do not match its parameters"},
      {"V002", "a kernel that returns values or takes a non-device buffer"},
      {"V003", "a kernel's workgroup size is zero or too large"},
      {"V004", "a box outside host code, or a device buffer of boxes"},
      {"V005", "a region that does not end in exactly one terminator"},
      {"V006", "an op with the wrong number of operands, results or regions"},
      {"V007", "an op or call in a function of the wrong kind (host-only in a kernel, kernel-only in host code)"},
      {"V008", "an operand used outside the scope of its definition"},
      {"V009", "an op's own rule (operand and result types, attributes) is broken"},
      {"V010", "recursion among kernels and device functions"},
      {"V011", "a function defined twice"},
      {"L001", "a linear value consumed twice"},
      {"L002", "a linear value used after it was consumed"},
      {"L003", "a loop body consumes a value defined outside the loop"},
      {"L004", "a linear value never consumed (leak)"},
      {"L005", "branches disagree on consuming a linear value"},
      {"L006", "a buffer view used after the buffer it views was consumed"},
      {"P001", "monomorphize: a function argument known only at run time"},
      {"P002", "monomorphize: a call or function reference whose types do not fit the callee"},
      {"P003", "monomorphize: a type variable no call site determines"},
      {"P004", "monomorphize: instantiation does not end"},
      {"P005", "monomorphize: an instance cannot be made (its name is taken, or its types are invalid)"},
      {"P006", "monomorphize: a type variable or template left after instantiation"},
      {"P007", "autodiff: a function that is not a device function with a body"},
      {"P008", "autodiff: a parameter that cannot be differentiated (linear or affine, or not a float)"},
      {"P009", "autodiff: an op without a derivative rule, or a call to a non-device function, on a differentiated value"},
      {"P010", "autodiff: a while loop that carries a differentiated value"},
      {"P011", "autodiff: a derivative rule returned the wrong number or types of values"},
      {"P012", "autodiff: the derivative's name is taken by a function of another type"},
      {"P013", "autodiff: an 'autodiff' attribute that is not \"reverse\", \"forward\" or \"both\""},
  };
  return codes;
}

}  // namespace eph
