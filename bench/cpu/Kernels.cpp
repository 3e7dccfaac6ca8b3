#include "bench/cpu/Kernels.h"

#include <string>

namespace eph::bench {

const char* const kSaxpyKernel = R"(
kernel @saxpy(%a: f32, %x: buffer<f32, device, read>, %y: buffer<f32, device, write>) workgroup(256, 1, 1) {
  %i = global_id {dim = 0} : u32
  %n = buffer.len %y : u32
  %inside = lt %i, %n : bool
  if %inside {
    %xi = load %x, %i : f32
    %yi = load %y, %i : f32
    %ax = mul %a, %xi : f32
    %r = add %ax, %yi : f32
    store %y, %i, %r
    yield
  } {
    yield
  }
  return
}
)";

const char* const kSumKernel = R"(
kernel @sum(%x: buffer<f32, device, read>, %partial: buffer<f32, device, write>, %chunk: u32) workgroup(32, 1, 1) {
  %s = workgroup.alloc {size = 32} : buffer<f32, workgroup, write>
  %lid = local_id {dim = 0} : u32
  %wg = workgroup_id {dim = 0} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %w = const {value = 32} : u32
  %zf = const {value = 0.0} : f32
  %base = mul %wg, %chunk : u32
  %steps = div %chunk, %w : u32
  %acc = for %zero, %steps, %one, %zf : f32 { |%k: u32, %a: f32|
    %off = mul %k, %w : u32
    %i0 = add %base, %off : u32
    %i = add %i0, %lid : u32
    %v = load %x, %i : f32
    %a2 = add %a, %v : f32
    yield %a2
  }
  store %s, %lid, %acc
  barrier
  %first = eq %lid, %zero : bool
  if %first {
    %t = for %zero, %w, %one, %zf : f32 { |%j: u32, %b: f32|
      %v = load %s, %j : f32
      %b2 = add %b, %v : f32
      yield %b2
    }
    store %partial, %wg, %t
    yield
  } {
    yield
  }
  return
}
)";

std::string sgemmPackKernel() {
  return R"(
kernel @pack(%b: buffer<vec<f32, 4>, device, read>, %bp: buffer<vec<f32, 4>, device, write>, %n: u32) workgroup(64, 1, 1) {
  %p = global_id {dim = 0} : u32
  %total = buffer.len %bp : u32
  %inside = lt %p, %total : bool
  if %inside {
    %four = const {value = 4} : u32
    %vcols = const {value = )" + std::to_string(kSgemmVecCols) + R"(} : u32
    %n4 = div %n, %four : u32
    %v = rem %p, %vcols : u32
    %t = div %p, %vcols : u32
    %k = rem %t, %n : u32
    %cb = div %t, %n : u32
    %row = mul %k, %n4 : u32
    %c0 = mul %cb, %vcols : u32
    %c = add %c0, %v : u32
    %src = add %row, %c : u32
    %x = load %b, %src : vec<f32, 4>
    store %bp, %p, %x
    yield
  } {
    yield
  }
  return
}
)";
}

std::string sgemmKernel() {
  constexpr unsigned R = kSgemmRows, V = kSgemmVecCols;
  auto num = [](unsigned v) { return std::to_string(v); };
  std::string t =
      "kernel @sgemm(%a: buffer<f32, device, read>, %b: buffer<vec<f32, 4>, device, read>, "
      "%c: buffer<vec<f32, 4>, device, write>, %n: u32) workgroup(1, 1, 1) {\n"
      "  %rb = workgroup_id {dim = 0} : u32\n"
      "  %cb = workgroup_id {dim = 1} : u32\n"
      "  %zero = const {value = 0} : u32\n"
      "  %one = const {value = 1} : u32\n"
      "  %four = const {value = 4} : u32\n"
      "  %rows = const {value = " + num(R) + "} : u32\n"
      "  %vcols = const {value = " + num(V) + "} : u32\n"
      "  %zf = const {value = 0.0} : f32\n"
      "  %zv = vec.make %zf, %zf, %zf, %zf : vec<f32, 4>\n"
      "  %n4 = div %n, %four : u32\n"
      "  %r0 = mul %rb, %rows : u32\n"
      "  %c0 = mul %cb, %vcols : u32\n"
      "  %pbase = mul %cb, %n : u32\n";
  for (unsigned r = 0; r < R; ++r) {
    t += "  %ro" + num(r) + " = const {value = " + num(r) + "} : u32\n";
    t += "  %row" + num(r) + " = add %r0, %ro" + num(r) + " : u32\n";
    t += "  %arow" + num(r) + " = mul %row" + num(r) + ", %n : u32\n";
    t += "  %crow" + num(r) + " = mul %row" + num(r) + ", %n4 : u32\n";
  }
  for (unsigned v = 0; v < V; ++v) {
    t += "  %vo" + num(v) + " = const {value = " + num(v) + "} : u32\n";
    t += "  %col" + num(v) + " = add %c0, %vo" + num(v) + " : u32\n";
  }
  std::string accs, inits, types, args, yields;
  for (unsigned r = 0; r < R; ++r)
    for (unsigned v = 0; v < V; ++v) {
      std::string id = num(r) + "_" + num(v);
      accs += std::string(accs.empty() ? "" : ", ") + "%acc" + id;
      inits += ", %zv";
      types += std::string(types.empty() ? "" : ", ") + "vec<f32, 4>";
      args += ", %s" + id + ": vec<f32, 4>";
      yields += std::string(yields.empty() ? "" : ", ") + "%t" + id;
    }
  t += "  " + accs + " = for %zero, %n, %one" + inits + " : " + types + " { |%k: u32" + args + "|\n";
  // B is packed: column block cb's vec4s for row k are at (cb * n + k) * V.
  t += "    %bk0 = add %pbase, %k : u32\n";
  t += "    %bk = mul %bk0, %vcols : u32\n";
  for (unsigned v = 0; v < V; ++v) {
    t += "    %bi" + num(v) + " = add %bk, %vo" + num(v) + " : u32\n";
    t += "    %b" + num(v) + " = load %b, %bi" + num(v) + " : vec<f32, 4>\n";
  }
  for (unsigned r = 0; r < R; ++r) {
    std::string rs = num(r);
    t += "    %ai" + rs + " = add %arow" + rs + ", %k : u32\n";
    t += "    %a" + rs + " = load %a, %ai" + rs + " : f32\n";
    t += "    %sa" + rs + " = vec.make %a" + rs + ", %a" + rs + ", %a" + rs + ", %a" + rs + " : vec<f32, 4>\n";
    for (unsigned v = 0; v < V; ++v) {
      std::string id = rs + "_" + num(v);
      t += "    %p" + id + " = mul %sa" + rs + ", %b" + num(v) + " : vec<f32, 4>\n";
      t += "    %t" + id + " = add %s" + id + ", %p" + id + " : vec<f32, 4>\n";
    }
  }
  t += "    yield " + yields + "\n  }\n";
  for (unsigned r = 0; r < R; ++r)
    for (unsigned v = 0; v < V; ++v) {
      std::string id = num(r) + "_" + num(v);
      t += "  %ci" + id + " = add %crow" + num(r) + ", %col" + num(v) + " : u32\n";
      t += "  store %c, %ci" + id + ", %acc" + id + "\n";
    }
  return t + "  return\n}\n";
}

}  // namespace eph::bench
