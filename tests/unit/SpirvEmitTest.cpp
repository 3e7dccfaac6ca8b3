// The SPIR-V emitter, one kernel per op family: each module must pass the
// validator (inside emitKernel, and again in the helper), and the
// disassembly must show the lowering the family calls for. Running the code
// against the interpreter is the Vulkan differential tests' job (lavapipe).
#include "tests/unit/SpirvTestUtil.h"

namespace eph::test {
namespace {

class SpirvEmitTest : public SpirvTest {};

bool has(const std::string& text, std::string_view what) { return text.find(what) != std::string::npos; }

TEST_F(SpirvEmitTest, IntegerArithmetic) {
  for (std::string_view t : {"i32", "u32", "i64", "u64", "i8", "u16"}) {
    std::string T(t);
    std::string text = asmOf(
        "kernel @k(%o: buffer<" + T + ", device, write>, %a: " + T + ", %b: " + T + ") workgroup(1, 1, 1) {\n"
        "  %0 = add %a, %b : " + T + "\n  %1 = sub %0, %b : " + T + "\n  %2 = mul %1, %a : " + T + "\n"
        "  %3 = div %2, %b : " + T + "\n  %4 = rem %3, %b : " + T + "\n  %5 = min %4, %a : " + T + "\n"
        "  %6 = max %5, %b : " + T + "\n  %7 = and %6, %a : " + T + "\n  %8 = or %7, %b : " + T + "\n"
        "  %9 = xor %8, %a : " + T + "\n  %10 = shl %9, %b : " + T + "\n  %11 = shr %10, %a : " + T + "\n"
        "  %12 = neg %11 : " + T + "\n  %13 = abs %12 : " + T + "\n  %14 = not %13 : " + T + "\n"
        "  %z = const {value = 0} : u32\n  store %o, %z, %14\n  return\n}\n");
    bool s = t[0] == 'i';
    EXPECT_TRUE(has(text, s ? "OpSDiv" : "OpUDiv")) << T << text;
    // Signed rem is x - (x / y) * y (OpSRem is wrong on NVIDIA for negative operands).
    EXPECT_TRUE(s ? !has(text, "OpSRem") && has(text, "OpISub") : has(text, "OpUMod")) << T;
    EXPECT_TRUE(has(text, s ? "SMin" : "UMin")) << T;
    EXPECT_TRUE(has(text, s ? "OpShiftRightArithmetic" : "OpShiftRightLogical")) << T;
    EXPECT_TRUE(has(text, "OpShiftLeftLogical")) << T;
    // The shift amount is masked to the width; division never sees 0.
    EXPECT_TRUE(has(text, "OpBitwiseAnd")) << T;
    EXPECT_TRUE(has(text, "OpIEqual")) << T;
  }
}

// Each buffer binding has a Block type of its own: on an NVIDIA H200 (driver
// 580) a load after a store to a written buffer read stale data when that
// buffer shared its Block type with a NonWritable one.
TEST_F(SpirvEmitTest, EveryBufferBindingHasItsOwnBlockType) {
  std::string text = asmOf(
      "kernel @k(%a: buffer<f32, device, read>, %o: buffer<f32, device, write>, %c: buffer<f32, device, write>) workgroup(1, 1, 1) {\n"
      "  %i = global_id {dim = 0} : u32\n  %x = load %a, %i : f32\n  store %c, %i, %x\n"
      "  %y = load %c, %i : f32\n  store %o, %i, %y\n  return\n}\n");
  size_t blocks = 0;
  for (size_t p = text.find("Block\n"); p != std::string::npos; p = text.find("Block\n", p + 1)) ++blocks;
  EXPECT_EQ(blocks, 3u) << text;
  EXPECT_TRUE(has(text, "OpDecorate %a NonWritable")) << text;
}

TEST_F(SpirvEmitTest, FloatArithmeticAndMath) {
  for (std::string_view t : {"f32", "f16", "f64"}) {
    std::string T(t);
    std::string text = asmOf(
        "kernel @k(%o: buffer<" + T + ", device, write>, %a: " + T + ", %b: " + T + ") workgroup(1, 1, 1) {\n"
        "  %0 = add %a, %b : " + T + "\n  %1 = sub %0, %b : " + T + "\n  %2 = mul %1, %a : " + T + "\n"
        "  %3 = div %2, %b : " + T + "\n  %4 = rem %3, %b : " + T + "\n  %5 = min %4, %a : " + T + "\n"
        "  %6 = max %5, %b : " + T + "\n  %7 = neg %6 : " + T + "\n  %8 = abs %7 : " + T + "\n"
        "  %9 = sqrt %8 : " + T + "\n  %10 = rsqrt %9 : " + T + "\n  %11 = exp %10 : " + T + "\n"
        "  %12 = log %11 : " + T + "\n  %13 = sin %12 : " + T + "\n  %14 = cos %13 : " + T + "\n"
        "  %15 = tan %14 : " + T + "\n  %16 = tanh %15 : " + T + "\n  %17 = floor %16 : " + T + "\n"
        "  %18 = ceil %17 : " + T + "\n  %19 = pow %18, %a : " + T + "\n"
        "  %z = const {value = 0} : u32\n  store %o, %z, %19\n  return\n}\n");
    EXPECT_TRUE(has(text, "NMin")) << T;  // fmin semantics: the non-NaN operand
    EXPECT_TRUE(has(text, "NMax")) << T;
    EXPECT_TRUE(has(text, "OpFRem")) << T;
    EXPECT_TRUE(has(text, "InverseSqrt")) << T;
    if (t == "f64") {
      // GLSL.std.450 has no 64-bit exp/log/sin/...: our lowering instead.
      EXPECT_FALSE(has(text, "Exp ")) << text;
      EXPECT_FALSE(has(text, " Sin ")) << text;
      EXPECT_FALSE(has(text, " Pow ")) << text;
      EXPECT_TRUE(has(text, "Ldexp")) << T;
      EXPECT_TRUE(has(text, "FrexpStruct")) << T;
      EXPECT_TRUE(has(text, "NoContraction")) << T;
      EXPECT_TRUE(has(text, "OpCapability Float64")) << T;
    } else {
      EXPECT_TRUE(has(text, "Exp")) << T;
      EXPECT_TRUE(has(text, "Tanh")) << T;
      EXPECT_TRUE(has(text, "Pow")) << T;
    }
    if (t == "f16") {
      EXPECT_TRUE(has(text, "OpCapability StorageBuffer16BitAccess")) << T;
    }
  }
}

TEST_F(SpirvEmitTest, MoreFloatMath) {
  for (std::string_view t : {"f32", "f16", "f64", "vec<f64, 2>", "vec<f16, 3>"}) {
    std::string T(t);
    std::string body;
    std::string prev = "%a";
    int k = 0;
    for (const char* op : {"asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "exp2", "log2",
                           "log1p", "expm1", "round", "trunc", "sign"}) {
      std::string cur = "%v" + std::to_string(k++);
      body += "  " + cur + " = " + op + " " + prev + " : " + T + "\n";
      prev = cur;
    }
    body += "  %w0 = atan2 " + prev + ", %b : " + T + "\n  %w1 = copysign %w0, %b : " + T +
            "\n  %w2 = fma %w1, %a, %b : " + T + "\n";
    std::string text = asmOf("kernel @k(%o: buffer<" + T + ", device, write>, %a: " + T + ", %b: " + T +
                             ") workgroup(1, 1, 1) {\n" + body +
                             "  %z = const {value = 0} : u32\n  store %o, %z, %w2\n  return\n}\n");
    ASSERT_FALSE(text.empty()) << T;
    // Our own atan family and fma everywhere (GLSL's may be 4096 ulp off, or unfused).
    for (const char* glsl : {" Asin ", " Acos ", " Atan ", " Atan2 ", " Fma ", " Round "})
      EXPECT_FALSE(has(text, glsl)) << T << ": " << glsl;
    if (t.find("f64") != std::string::npos) {
      for (const char* glsl : {" Sinh ", " Cosh ", " Exp2 ", " Log2 ", " Log ", " Exp "})
        EXPECT_FALSE(has(text, glsl)) << T << ": " << glsl;
      EXPECT_FALSE(has(text, "OpTypeInt 64")) << T;  // copysign's sign bit from the high word
    }
    if (t == "f32") EXPECT_TRUE(has(text, " Exp2 ")) << T;
  }
}

TEST_F(SpirvEmitTest, ComparisonsSelectAndCasts) {
  std::string text = asmOf(R"(
kernel @k(%o: buffer<i32, device, write>, %f: f32, %d: f64, %i: i32, %u: u64, %c: bool) workgroup(1, 1, 1) {
  %z = const {value = 0} : u32
  %e = eq %f, %f : bool
  %n = ne %f, %f : bool
  %l = lt %i, %i : bool
  %le = le %u, %u : bool
  %g = gt %c, %c : bool
  %ge = ge %d, %d : bool
  %x = and %e, %n : bool
  %y = or %l, %le : bool
  %w = xor %g, %ge : bool
  %v = select %x, %y, %w : bool
  %ni = not %v : bool
  %b = cast %ni : i32
  %fi = cast %f : i32
  %fu = cast %d : u64
  %fb = cast %f : bool
  %i8 = cast %i : i8
  %i64 = cast %i : i64
  %uf = cast %u : f32
  %if = cast %i : f64
  %ff = cast %f : f64
  %df = cast %d : f16
  %bf = cast %c : f32
  %bits = bitcast %f : u32
  %back = bitcast %bits : f32
  %s = select %c, %b, %fi : i32
  store %o, %z, %s
  return
}
)");
  EXPECT_TRUE(has(text, "OpFOrdEqual"));
  EXPECT_TRUE(has(text, "OpFUnordNotEqual"));  // ne is unordered: nan != nan
  EXPECT_TRUE(has(text, "OpSLessThan"));
  EXPECT_TRUE(has(text, "OpULessThanEqual"));
  EXPECT_TRUE(has(text, "OpFOrdGreaterThanEqual"));
  EXPECT_TRUE(has(text, "OpConvertFToS"));
  EXPECT_TRUE(has(text, "OpConvertFToU"));
  EXPECT_TRUE(has(text, "OpSConvert"));
  EXPECT_TRUE(has(text, "OpUConvert"));
  EXPECT_TRUE(has(text, "OpConvertUToF"));
  EXPECT_TRUE(has(text, "OpConvertSToF"));
  EXPECT_TRUE(has(text, "OpFConvert"));
  EXPECT_TRUE(has(text, "OpBitcast"));
}

TEST_F(SpirvEmitTest, FloatToIntSaturatesExplicitly) {
  std::string text = asmOf(R"(
kernel @k(%o: buffer<i32, device, write>, %f: f32) workgroup(1, 1, 1) {
  %z = const {value = 0} : u32
  %i = cast %f : i32
  store %o, %z, %i
  return
}
)");
  // The bounds -2^31 and 2^31 as f32 constants, and the saturated results.
  EXPECT_TRUE(has(text, "-2.14748365e+09")) << text;
  EXPECT_TRUE(has(text, "2.14748365e+09")) << text;
  EXPECT_TRUE(has(text, "2147483647")) << text;
  EXPECT_TRUE(has(text, "OpFOrdGreaterThanEqual")) << text;
  EXPECT_TRUE(has(text, "OpFOrdLessThanEqual")) << text;
}

TEST_F(SpirvEmitTest, Vectors) {
  std::string text = asmOf(R"(
kernel @k(%o: buffer<vec<f32, 3>, device, write>, %p: buffer<vec<bool, 2>, device, write>, %a: f32) workgroup(1, 1, 1) {
  %z = const {value = 0} : u32
  %v = vec.make %a, %a, %a : vec<f32, 3>
  %w = vec.insert %v, %a {index = 1} : vec<f32, 3>
  %x = vec.extract %w {index = 2} : f32
  %c = cross %v, %w : vec<f32, 3>
  %d = dot %c, %v : f32
  %l = length %c : f32
  %nv = normalize %c : vec<f32, 3>
  %s = add %nv, %v : vec<f32, 3>
  %m = mul %s, %s : vec<f32, 3>
  %sq = sqrt %m : vec<f32, 3>
  %pw = pow %sq, %m : vec<f32, 3>
  %cmp = lt %pw, %v : vec<bool, 3>
  %e0 = vec.extract %cmp {index = 0} : bool
  %sel = select %e0, %pw, %v : vec<f32, 3>
  %ci = cast %sel : vec<i32, 3>
  %cf = cast %ci : vec<f32, 3>
  store %o, %z, %cf
  %b = vec.make %e0, %e0 : vec<bool, 2>
  store %p, %z, %b
  return
}
)");
  EXPECT_TRUE(has(text, "OpDot"));
  EXPECT_TRUE(has(text, "Cross"));
  EXPECT_TRUE(has(text, "Length"));
  EXPECT_TRUE(has(text, "Normalize"));
  EXPECT_TRUE(has(text, "ArrayStride 16"));  // vec3 is padded to 16 in buffers
  EXPECT_TRUE(has(text, "ArrayStride 8"));   // vec<bool, 2> is two u32
}

TEST_F(SpirvEmitTest, StructsSumsAndArrays) {
  std::string text = asmOf(R"(
kernel @k(%o: buffer<struct<f32, bool, vec<i32, 3>, array<u32, 3>>, device, write>, %a: f32, %i: u32) workgroup(1, 1, 1) {
  %z = const {value = 0} : u32
  %one = const {value = 1} : u32
  %t = const {value = true} : bool
  %iv = const {value = 7} : i32
  %v = vec.make %iv, %iv, %iv : vec<i32, 3>
  %arr = array.make %z, %one, %i : array<u32, 3>
  %arr2 = array.set %arr, %i, %one : array<u32, 3>
  %arr3 = array.set %arr2, %one, %z : array<u32, 3>
  %g = array.get %arr3, %i : u32
  %g1 = array.get %arr3, %one : u32
  %s = struct.make %a, %t, %v, %arr3 : struct<f32, bool, vec<i32, 3>, array<u32, 3>>
  %f = struct.extract %s {index = 0} : f32
  %s2 = struct.insert %s, %a {index = 0} : struct<f32, bool, vec<i32, 3>, array<u32, 3>>
  %p0, %p1, %p2, %p3 = struct.unpack %s2 : f32, bool, vec<i32, 3>, array<u32, 3>
  %u = struct.make : struct<>
  %sum = sum.make %g {tag = 1} : sum<struct<>, u32, f32>
  %sum0 = sum.make %u {tag = 0} : sum<struct<>, u32, f32>
  %tag = sum.tag %sum : u8
  %which = select %p1, %sum, %sum0 : sum<struct<>, u32, f32>
  %r = match %which : f32 { |%x: struct<>|
    yield %f
  } { |%x: u32|
    %c = cast %x : f32
    yield %c
  } { |%x: f32|
    yield %x
  }
  %s3 = struct.insert %s2, %r {index = 0} : struct<f32, bool, vec<i32, 3>, array<u32, 3>>
  store %o, %g1, %s3
  return
}
)");
  EXPECT_TRUE(has(text, "OpSwitch"));
  EXPECT_TRUE(has(text, "OpSelectionMerge"));
  EXPECT_TRUE(has(text, "Function"));       // the dynamic array index
  EXPECT_TRUE(has(text, "MemberDecorate")); // explicit layout for the buffer struct
  EXPECT_TRUE(has(text, "Offset 16"));      // the vec3 after f32 and bool
  EXPECT_TRUE(has(text, "Offset 32"));      // the array after the 16-byte vec3
}

TEST_F(SpirvEmitTest, AggregatesOnSpirv13) {
  // Vulkan 1.1 means SPIR-V 1.3, where OpSelect takes only scalars and
  // vectors: selecting structs, sums and arrays goes member by member.
  std::string text = asmOf(R"(
kernel @k(%o: buffer<u32, device, write>, %c: bool, %a: u32) workgroup(1, 1, 1) {
  %z = const {value = 0} : u32
  %s1 = struct.make %a, %c : struct<u32, bool>
  %s2 = struct.make %z, %c : struct<u32, bool>
  %s = select %c, %s1, %s2 : struct<u32, bool>
  %arr1 = array.make %a, %z : array<u32, 2>
  %arr2 = array.make %z, %a : array<u32, 2>
  %arr = select %c, %arr1, %arr2 : array<u32, 2>
  %u = struct.make : struct<>
  %m1 = sum.make %a {tag = 1} : sum<struct<>, u32>
  %m2 = sum.make %u {tag = 0} : sum<struct<>, u32>
  %m = select %c, %m1, %m2 : sum<struct<>, u32>
  %t = sum.tag %m : u32
  %x = struct.extract %s {index = 0} : u32
  %y = array.get %arr, %t : u32
  %r = match %m : u32 { |%p: struct<>|
    yield %x
  } { |%p: u32|
    %q = add %p, %y : u32
    yield %q
  }
  store %o, %z, %r
  return
}
)", "k", "minimal");
  EXPECT_TRUE(has(text, "; Version: 1.3")) << text;
  EXPECT_TRUE(has(text, "OpCompositeConstruct")) << text;
  EXPECT_TRUE(has(text, "OpSwitch")) << text;
}

TEST_F(SpirvEmitTest, ControlFlow) {
  std::string text = asmOf(R"(
kernel @k(%o: buffer<i32, device, write>, %n: i32, %step: i32) workgroup(1, 1, 1) {
  %z = const {value = 0} : i32
  %one = const {value = 1} : i32
  %sum = for %z, %n, %step, %z : i32 { |%i: i32, %acc: i32|
    %odd = and %i, %one : i32
    %isodd = ne %odd, %z : bool
    %next = if %isodd : i32 {
      %a = add %acc, %i : i32
      yield %a
    } {
      yield %acc
    }
    yield %next
  }
  %down = for %n, %z, %step, %sum : i32 { |%i: i32, %acc: i32|
    %a = sub %acc, %one : i32
    yield %a
  }
  %x, %c = while %down, %z : i32, i32 { |%v: i32, %k: i32|
    %more = gt %v, %z : bool
    %inner = if %more : bool {
      %lt = lt %k, %n : bool
      yield %lt
    } {
      %f = const {value = false} : bool
      yield %f
    }
    condition %inner, %v, %k
  } { |%v: i32, %k: i32|
    %v2 = sub %v, %one : i32
    %k2 = add %k, %one : i32
    yield %v2, %k2
  }
  %u = const {value = 0} : u32
  store %o, %u, %c
  return
}
)");
  EXPECT_TRUE(has(text, "OpLoopMerge"));
  EXPECT_TRUE(has(text, "OpPhi"));
  EXPECT_TRUE(has(text, "OpSelectionMerge"));
}

TEST_F(SpirvEmitTest, UnsignedForLoopNeverWraps) {
  std::string text = asmOf(R"(
kernel @k(%o: buffer<u8, device, write>) workgroup(1, 1, 1) {
  %lo = const {value = 250} : u8
  %hi = const {value = 255} : u8
  %st = const {value = 3} : u8
  %z = const {value = 0} : u32
  %last = for %lo, %hi, %st, %lo : u8 { |%i: u8, %a: u8|
    yield %i
  }
  store %o, %z, %last
  return
}
)");
  EXPECT_TRUE(has(text, "OpUGreaterThan"));  // iv + step must grow, or the loop ends
  EXPECT_TRUE(has(text, "OpCapability StorageBuffer8BitAccess"));
  EXPECT_TRUE(has(text, "OpCapability Int8"));
}

TEST_F(SpirvEmitTest, DeviceFunctionsAreInlined) {
  std::string text = asmOf(R"(
device @scale(%b: buffer<f32, device, write>, %i: u32, %f: f32) -> f32 {
  %v = load %b, %i : f32
  %r = mul %v, %f : f32
  store %b, %i, %r
  %id = global_id {dim = 0} : u32
  %c = cast %id : f32
  return %c
}
device @twice(%b: buffer<f32, device, write>, %i: u32) -> f32 {
  %two = const {value = 2.0} : f32
  %x = call %b, %i, %two {callee = @scale} : f32
  %y = call %b, %i, %x {callee = @scale} : f32
  return %y
}
kernel @k(%out: buffer<f32, device, write>) workgroup(8, 1, 1) {
  %i = global_id {dim = 0} : u32
  %r = call %out, %i {callee = @twice} : f32
  return
}
)");
  EXPECT_FALSE(has(text, "OpFunctionCall"));
  EXPECT_EQ(text.find("OpFunction "), text.rfind("OpFunction "));  // one function: the kernel
}

TEST_F(SpirvEmitTest, BuffersWorkgroupMemoryAndBarriers) {
  std::string text = asmOf(R"(
kernel @k(%in: buffer<bool, device, read>, %out: buffer<u32, device, write>) workgroup(16, 2, 1) {
  %sh = workgroup.alloc {size = 32} : buffer<bool, workgroup, write>
  %lid = local_id {dim = 0} : u32
  %ly = local_id {dim = 1} : u32
  %g = global_id {dim = 0} : u32
  %wg = workgroup_id {dim = 0} : u32
  %nw = num_workgroups {dim = 2} : u32
  %ws = workgroup_size {dim = 1} : u32
  %n = buffer.len %in : u64
  %m = buffer.len %sh : u32
  %v = load %in, %lid : bool
  store %sh, %lid, %v
  barrier
  %w = load %sh, %ly : bool
  %c = cast %w : u32
  %t = add %c, %ws : u32
  store %out, %g, %t
  return
}
)");
  // AcquireRelease|WorkgroupMemory: no device buffer is both read and written.
  EXPECT_TRUE(has(text, "OpControlBarrier %uint_2 %uint_2 %uint_264")) << text;
  EXPECT_TRUE(has(text, "Workgroup"));
  EXPECT_TRUE(has(text, "BuiltIn GlobalInvocationId"));
  EXPECT_TRUE(has(text, "BuiltIn LocalInvocationId"));
  EXPECT_TRUE(has(text, "BuiltIn WorkgroupId"));
  EXPECT_TRUE(has(text, "BuiltIn NumWorkgroups"));
  EXPECT_TRUE(has(text, "OpArrayLength"));
  EXPECT_TRUE(has(text, "OpCapability Int64"));  // buffer.len as u64
}

TEST_F(SpirvEmitTest, SubgroupBuiltinsAddGroupNonUniform) {
  for (std::string_view profile : {"lavapipe", "minimal"}) {
    std::string text = asmOf(R"(
kernel @k(%out: buffer<u32, device, write>) workgroup(64, 1, 1) {
  %s = subgroup_size : u32
  %i = subgroup_id : u32
  %l = subgroup_local_id : i32
  %li = bitcast %l : u32
  %a = add %s, %i : u32
  %b = add %a, %li : u32
  %g = global_id {dim = 0} : u32
  store %out, %g, %b
  return
}
)", "k", profile);
    EXPECT_TRUE(has(text, "OpCapability GroupNonUniform")) << profile;
    EXPECT_TRUE(has(text, "BuiltIn SubgroupSize"));
    EXPECT_TRUE(has(text, "BuiltIn SubgroupId"));
    EXPECT_TRUE(has(text, "BuiltIn SubgroupLocalInvocationId"));
  }
}

TEST_F(SpirvEmitTest, IntegerAtomics) {
  for (std::string_view t : {"u32", "i32", "i64", "u64"}) {
    std::string T(t);
    std::string text = asmOf(
        "kernel @k(%b: buffer<" + T + ", device, write>, %v: " + T + ") workgroup(1, 1, 1) {\n"
        "  %i = const {value = 0} : u32\n"
        "  %0 = atomic.add %b, %i, %v : " + T + "\n  %1 = atomic.min %b, %i, %0 : " + T + "\n"
        "  %2 = atomic.max %b, %i, %1 : " + T + "\n  %3 = atomic.xchg %b, %i, %2 : " + T + "\n"
        "  %4 = atomic.cmpxchg %b, %i, %3, %v : " + T + "\n"
        "  %sh = workgroup.alloc {size = 4} : buffer<" + T + ", workgroup, write>\n"
        "  %5 = atomic.add %sh, %i, %4 : " + T + "\n  store %b, %i, %5\n  return\n}\n");
    bool s = t[0] == 'i';
    EXPECT_TRUE(has(text, "OpAtomicIAdd")) << T;
    EXPECT_TRUE(has(text, s ? "OpAtomicSMin" : "OpAtomicUMin")) << T;
    EXPECT_TRUE(has(text, s ? "OpAtomicSMax" : "OpAtomicUMax")) << T;
    EXPECT_TRUE(has(text, "OpAtomicExchange")) << T;
    EXPECT_TRUE(has(text, "OpAtomicCompareExchange")) << T;
    EXPECT_EQ(has(text, "OpCapability Int64Atomics"), t.ends_with("64")) << T;
  }
}

constexpr std::string_view kFloatAtomics = R"(
kernel @k(%b: buffer<f32, device, write>, %v: f32) workgroup(1, 1, 1) {
  %i = const {value = 0} : u32
  %old = atomic.add %b, %i, %v : f32
  %x = load %b, %i : f32
  %s = add %old, %x : f32
  store %b, %i, %s
  return
}
)";

TEST_F(SpirvEmitTest, NativeFloatAtomicAdd) {
  std::string text = asmOf(kFloatAtomics, "k", "lavapipe");
  EXPECT_TRUE(has(text, "OpAtomicFAddEXT"));
  EXPECT_TRUE(has(text, "OpCapability AtomicFloat32AddEXT"));
  EXPECT_TRUE(has(text, "OpExtension \"SPV_EXT_shader_atomic_float_add\""));
  EXPECT_FALSE(has(text, "OpAtomicCompareExchange"));
}

TEST_F(SpirvEmitTest, FloatAtomicAddWithoutNativeSupportIsACasLoop) {
  std::string text = asmOf(kFloatAtomics, "k", "minimal");
  EXPECT_FALSE(has(text, "OpAtomicFAddEXT"));
  EXPECT_FALSE(has(text, "AtomicFloat32AddEXT"));
  EXPECT_FALSE(has(text, "SPV_EXT_shader_atomic_float_add"));
  EXPECT_TRUE(has(text, "OpAtomicCompareExchange"));
  EXPECT_TRUE(has(text, "OpLoopMerge"));
  EXPECT_TRUE(has(text, "OpBitcast"));  // the buffer holds the float's bits as u32
}

TEST_F(SpirvEmitTest, FloatAtomicsOnF64AndWorkgroupMemory) {
  std::string text = asmOf(R"(
kernel @k(%b: buffer<f64, device, write>, %c: buffer<f32, device, write>, %v: f64) workgroup(4, 1, 1) {
  %i = const {value = 0} : u32
  %sh = workgroup.alloc {size = 4} : buffer<f32, workgroup, write>
  %f = cast %v : f32
  store %sh, %i, %f
  barrier
  %o1 = atomic.add %sh, %i, %f : f32
  %o2 = atomic.xchg %c, %i, %o1 : f32
  %o3 = atomic.add %b, %i, %v : f64
  %o4 = atomic.xchg %b, %i, %o3 : f64
  return
}
)", "k", "nvidia");
  // f64 add would be native on this device, but the same buffer is also
  // exchanged, so it is accessed as u64 bits and the add is a CAS loop.
  EXPECT_TRUE(has(text, "OpAtomicCompareExchange"));
  EXPECT_TRUE(has(text, "OpCapability Int64Atomics"));
}

TEST_F(SpirvEmitTest, NativeF64AtomicAdd) {
  std::string text = asmOf(R"(
kernel @k(%b: buffer<f64, device, write>, %v: f64) workgroup(1, 1, 1) {
  %i = const {value = 0} : u32
  %o = atomic.add %b, %i, %v : f64
  return
}
)", "k", "nvidia");
  EXPECT_TRUE(has(text, "OpAtomicFAddEXT"));
  EXPECT_TRUE(has(text, "OpCapability AtomicFloat64AddEXT"));
}

TEST_F(SpirvEmitTest, PushConstantLayout) {
  std::string text = asmOf(R"(
kernel @k(%a: u8, %o: buffer<f32, device, write>, %b: f64, %c: bool, %d: vec<f32, 3>, %e: f32) workgroup(1, 1, 1) {
  return
}
)");
  // u8 at 0, f64 at 8, bool (u32) at 16, vec3 at 32, f32 at 48.
  EXPECT_TRUE(has(text, "Offset 8"));
  EXPECT_TRUE(has(text, "Offset 16"));
  EXPECT_TRUE(has(text, "Offset 32"));
  EXPECT_TRUE(has(text, "Offset 48"));
  EXPECT_TRUE(has(text, "OpCapability StoragePushConstant8"));
}

TEST_F(SpirvEmitTest, VulkanVersionsPickTheSpirvVersion) {
  load(R"(
kernel @k(%o: buffer<u32, device, write>) workgroup(1, 1, 1) {
  %i = global_id {dim = 0} : u32
  store %o, %i, %i
  return
}
)");
  struct Case { uint32_t api; uint32_t spirv; };
  for (Case c : {Case{0, 0x10600}, Case{1u << 22 | 1u << 12, 0x10300}, Case{1u << 22 | 2u << 12, 0x10500},
                 Case{1u << 22 | 3u << 12, 0x10600}}) {
    DeviceCaps dc = caps("lavapipe");
    dc.vulkanApiVersion = c.api;
    auto words = emit("k", dc);
    ASSERT_TRUE(bool(words)) << words.error().str();
    EXPECT_EQ((*words)[1], c.spirv);
  }
}


// A barrier orders device memory (0x148 = 328) only where invocations may
// communicate through a device buffer: one both read and written (traced
// through device functions), or one used by an atomic; else 0x108 = 264.
TEST_F(SpirvEmitTest, BarrierOrdersDeviceMemoryOnlyWhereABufferIsReadAndWritten) {
  const std::string put =
      "device @put(%o: buffer<f32, device, write>, %i: u32, %v: f32) {\n  store %o, %i, %v\n  return\n}\n"
      "device @get(%a: buffer<f32, device, read>, %i: u32) -> f32 {\n  %x = load %a, %i : f32\n  return %x\n}\n";
  auto barrierOf = [&](const std::string& params, const std::string& body) {
    std::string text = asmOf(put + "kernel @k(" + params + ") workgroup(4, 1, 1) {\n"
                             "  %i = global_id {dim = 0} : u32\n" + body + "  return\n}\n");
    size_t at = text.find("OpControlBarrier %uint_2 %uint_2 ");
    if (at == std::string::npos) return std::string("none");
    size_t from = at + std::string("OpControlBarrier %uint_2 %uint_2 ").size();
    return text.substr(from, text.find('\n', from) - from);
  };
  const std::string two = "%a: buffer<f32, device, read>, %o: buffer<f32, device, write>";
  // Read one, write another (directly or through calls): workgroup memory only.
  EXPECT_EQ(barrierOf(two, "  %x = load %a, %i : f32\n  barrier\n  store %o, %i, %x\n"), "%uint_264");
  EXPECT_EQ(barrierOf(two, "  %x = call %a, %i {callee = @get} : f32\n  barrier\n  call %o, %i, %x {callee = @put}\n"),
            "%uint_264");
  // The same buffer read and written, in either order, or through a call.
  EXPECT_EQ(barrierOf(two, "  %x = load %a, %i : f32\n  store %o, %i, %x\n  barrier\n  %y = load %o, %i : f32\n"
                           "  store %o, %i, %y\n"),
            "%uint_328");
  EXPECT_EQ(barrierOf(two, "  %x = load %a, %i : f32\n  call %o, %i, %x {callee = @put}\n  barrier\n"
                           "  %y = call %o, %i {callee = @get} : f32\n  store %o, %i, %y\n"),
            "%uint_328");
  // An atomic on a device buffer, even one never loaded.
  EXPECT_EQ(barrierOf("%c: buffer<u32, device, write>",
                      "  %one = const {value = 1} : u32\n  %old = atomic.add %c, %i, %one : u32\n  barrier\n"),
            "%uint_328");
  // Workgroup memory read and written does not count.
  EXPECT_EQ(barrierOf(two, "  %t = workgroup.alloc {size = 4} : buffer<f32, workgroup, write>\n"
                           "  %l = local_id {dim = 0} : u32\n  %x = load %a, %i : f32\n  store %t, %l, %x\n"
                           "  barrier\n  %y = load %t, %l : f32\n  store %o, %i, %y\n"),
            "%uint_264");
  // The switch back for experiments.
  setenv("EPH_SPIRV_TUNE", "uniform-barrier", 1);
  std::string forced = barrierOf(two, "  %x = load %a, %i : f32\n  barrier\n  store %o, %i, %x\n");
  unsetenv("EPH_SPIRV_TUNE");
  EXPECT_EQ(forced, "%uint_328");
}

// `for` with constant bounds and step: the Unroll hint up to 16 trips, and no
// wrap-around flag for a step of 1; a run-time bound with step 2 keeps it.
TEST_F(SpirvEmitTest, ConstantTripLoopsAreUnrolledWithoutAWrapFlag) {
  auto loopOf = [&](const std::string& lo, const std::string& hi, const std::string& step) {
    return asmOf("kernel @k(%o: buffer<u32, device, write>, %n: u32) workgroup(1, 1, 1) {\n"
                 "  %lo = const {value = " + lo + "} : u32\n  %step = const {value = " + step + "} : u32\n" +
                 (hi == "n" ? std::string("  %hi = add %n, %lo : u32\n") : "  %hi = const {value = " + hi + "} : u32\n") +
                 "  %s = for %lo, %hi, %step, %lo : u32 { |%i: u32, %acc: u32|\n    %t = add %acc, %i : u32\n"
                 "    yield %t\n  }\n  store %o, %lo, %s\n  return\n}\n");
  };
  std::string eight = loopOf("0", "8", "1");
  EXPECT_TRUE(has(eight, " Unroll\n")) << eight;
  EXPECT_FALSE(has(eight, "OpPhi %bool")) << eight;
  EXPECT_FALSE(has(eight, "OpUGreaterThan")) << eight;
  EXPECT_TRUE(has(loopOf("4", "36", "2"), " Unroll"));  // 16 trips
  EXPECT_FALSE(has(loopOf("4", "37", "2"), " Unroll"));  // 17
  EXPECT_FALSE(has(loopOf("8", "8", "1"), " Unroll"));   // none
  // Step 2 up to 0xffffffff: iv + 2 wraps at the last iteration, so the flag stays.
  std::string top = loopOf("1", "4294967295", "2");
  EXPECT_TRUE(has(top, "OpPhi %bool") && has(top, "OpUGreaterThan")) << top;
  std::string runtime = loopOf("0", "n", "2");
  EXPECT_TRUE(has(runtime, "OpPhi %bool") && has(runtime, "OpUGreaterThan")) << runtime;
  EXPECT_FALSE(has(runtime, " Unroll")) << runtime;
  // Step 2 to a constant far from the top cannot wrap.
  EXPECT_FALSE(has(loopOf("0", "1000", "2"), "OpPhi %bool"));
}

}  // namespace
}  // namespace eph::test
