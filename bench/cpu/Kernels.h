// The IR kernels the CPU benchmarks run (as .eir text), written the way a
// GPU programmer would, so that the cpu target's lowering makes them fast:
// uniform loops interchange with the invocation loop and vectorise across
// invocations.
#pragma once

#include <string>

namespace eph::bench {

// y = a*x + y, one element per invocation, 256 per workgroup.
extern const char* const kSaxpyKernel;
// Each workgroup of 32 sums a chunk of %chunk elements into partial[wg]
// (invocation i adds elements i, i + 32, ...; invocation 0 adds the 32 sums).
// Run twice: over the input, then over the partial sums.
extern const char* const kSumKernel;
// C = A * B for row-major n x n f32 matrices (n a multiple of 16), in two
// kernels. @pack copies B into column panels: for each block of 4 *
// kSgemmVecCols columns, its rows one after another, so that the multiply
// streams B contiguously. @sgemm: each invocation (a workgroup of one)
// computes a block of kSgemmRows rows by 4 * kSgemmVecCols columns of C in
// vec4 registers; per k, kSgemmVecCols vec4 loads of the packed B, one
// broadcast of A[row][k] per row, and multiply-adds (a separate multiply and
// add, as the interpreter rounds). B and C are bound as buffers of
// vec<f32, 4> (the same bytes as f32 rows). Workgroup (x, y) computes row
// block x and column block y, so consecutive workgroups reuse one panel of B
// from cache. Grids: pack n * n / 4 / 64 workgroups; sgemm n / kSgemmRows by
// n / (4 * kSgemmVecCols).
constexpr unsigned kSgemmRows = 4, kSgemmVecCols = 4;
std::string sgemmKernel();
std::string sgemmPackKernel();

}  // namespace eph::bench
