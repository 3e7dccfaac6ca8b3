// Interpreter values as text (format, parseValue), constant evaluation
// (evalPure) and the op table's completeness: every op has semantics.
#include <cmath>

#include "ir/OpTable.h"
#include "tests/unit/InterpTestUtil.h"

namespace eph::test {
namespace {

class InterpValue : public InterpTest {
 protected:
  const ir::Type* type(const char* text) { return *ir::parseType(ctx_, text); }
  // parseValue then format, or "error: <message>".
  std::string roundTrip(const char* text, const char* t) {
    auto v = interp::parseValue(text, type(t), mem_);
    if (!v) return "error: " + v.error().message;
    return interp::format(*v, &mem_);
  }
  interp::Memory mem_;
};

TEST_F(InterpValue, ParseValueGivesClearErrors) {
  EXPECT_EQ(roundTrip("abc", "i32"), "error: expected an i32, got 'abc'");
  EXPECT_EQ(roundTrip("1.5", "u32"), "error: expected a u32, got '1.5'");
  EXPECT_EQ(roundTrip("", "i32"), "error: expected an i32, got end of input");
  EXPECT_EQ(roundTrip("300", "u8"), "error: integer 300 is out of range for u8 (0..255)");
  EXPECT_EQ(roundTrip("-1", "u32"), "error: integer -1 is out of range for u32 (0..4294967295)");
  EXPECT_EQ(roundTrip("-129", "i8"), "error: integer -129 is out of range for i8 (-128..127)");
  EXPECT_EQ(roundTrip("9223372036854775808", "i64"),
            "error: integer 9223372036854775808 is out of range for i64 "
            "(-9223372036854775808..9223372036854775807)");
  EXPECT_EQ(roundTrip("1.5x", "f32"), "error: expected an f32, got '1.5x'");
  EXPECT_EQ(roundTrip("1e999", "f64"), "error: float '1e999' is out of range for f64");
  EXPECT_EQ(roundTrip("yes", "bool"), "error: expected a bool, got 'yes'");
  EXPECT_EQ(roundTrip("<1, 2>", "vec<i32, 3>"), "error: vec<i32, 3> has 3 elements, got 2");
  EXPECT_EQ(roundTrip("42 43", "i32"), "error: unexpected '43' after the value");
  EXPECT_EQ(roundTrip("[1, x]", "buffer<i16, host, read>"), "error: expected an i16, got 'x'");
  EXPECT_EQ(roundTrip("#2(1)", "sum<i32, f32>"), "error: expected a variant number 0..1 of sum<i32, f32>, got '2'");
}

TEST_F(InterpValue, ParseAndFormatAgree) {
  EXPECT_EQ(roundTrip(" -42 ", "i32"), "-42");
  EXPECT_EQ(roundTrip("+7", "u8"), "7");
  EXPECT_EQ(roundTrip("18446744073709551615", "u64"), "18446744073709551615");
  EXPECT_EQ(roundTrip("true", "bool"), "true");
  EXPECT_EQ(roundTrip("0.1", "f32"), "0.1");
  EXPECT_EQ(roundTrip("0.1", "f16"), "0.1");
  EXPECT_EQ(roundTrip("65504", "f16"), "65504.0");
  EXPECT_EQ(roundTrip("1e-8", "f32"), "1e-08");
  EXPECT_EQ(roundTrip("1e21", "f64"), "1e+21");
  EXPECT_EQ(roundTrip("-inf", "f64"), "-inf");
  EXPECT_EQ(roundTrip("nan", "f32"), "nan");
  EXPECT_EQ(roundTrip("3", "f32"), "3.0");
  EXPECT_EQ(roundTrip("<1, -2>", "vec<i8, 2>"), "<1, -2>");
  EXPECT_EQ(roundTrip("(1, 2.5, (true, [3, 4]))", "struct<u16, f64, struct<bool, array<i32, 2>>>"),
            "(1, 2.5, (true, [3, 4]))");
  EXPECT_EQ(roundTrip("#1(-3)", "sum<f32, i32>"), "#1(-3)");
  EXPECT_EQ(roundTrip("()", "struct<>"), "()");
}

TEST_F(InterpValue, BufferArgumentsBecomeWrittenBuffers) {
  auto v = interp::parseValue("[1.5, -2, 3]", type("buffer<f32, device, read>"), mem_);
  ASSERT_TRUE(v);
  interp::BufferData* b = mem_.get(v->buffer);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->elems.size(), 3u);
  EXPECT_EQ(b->written, std::vector<bool>({true, true, true}));
  EXPECT_EQ(b->elems[1].f, -2.0);
  EXPECT_EQ(interp::format(*v, &mem_), "[1.5, -2.0, 3.0]");
  EXPECT_EQ(mem_.live(), std::vector<uint64_t>({v->buffer}));
  b->freed = true;
  EXPECT_EQ(interp::format(*v, &mem_), "<freed buffer>");
  EXPECT_TRUE(mem_.live().empty());
}

TEST_F(InterpValue, RtValueConstructorsWrapAndRound) {
  EXPECT_EQ(interp::RtValue::ofInt(type("u8"), 511).i, 255);
  EXPECT_EQ(interp::RtValue::ofInt(type("i8"), 255).i, -1);
  EXPECT_EQ(interp::RtValue::ofInt(type("u64"), -1).i, -1);  // stored by its bits
  EXPECT_EQ(interp::RtValue::ofFloat(type("f32"), 0.1).f, double(0.1f));
  EXPECT_EQ(interp::RtValue::ofFloat(type("f16"), 0.1).f, 0.0999755859375);
  EXPECT_FALSE(interp::RtValue::ofFloat(type("f32"), 0.0) == interp::RtValue::ofFloat(type("f32"), -0.0));
  EXPECT_TRUE(interp::RtValue::ofFloat(type("f64"), NAN) == interp::RtValue::ofFloat(type("f64"), NAN));
}

// The ops of @main's body, in order.
std::vector<ir::Op*> opsOf(ir::Module* m, const char* fn = "main") {
  std::vector<ir::Op*> ops;
  for (auto& op : m->lookup(fn)->body().ops()) ops.push_back(op.get());
  return ops;
}

TEST_F(InterpValue, EvalPureFoldsLikeExecution) {
  ir::Module* m = load(
      "host @main(%a: i32, %b: i32, %f: f32, %buf: buffer<i32, host, read>) -> i32 {\n"
      "  %s = add %a, %a : i32\n"
      "  %q = div %a, %b : i32\n"
      "  %c = cast %f : u8\n"
      "  %x = load %buf, %a : i32\n"
      "  %n = buffer.len %buf : u32\n"
      "  %k = const {value = -5} : i16\n"
      "  %lt = lt %a, %b : bool\n"
      "  return %s\n}\n"
      "kernel @k() workgroup(1, 1, 1) {\n"
      "  %g = global_id {dim = 0} : u32\n"
      "  return\n}\n");
  auto ops = opsOf(m);
  const ir::Type* i32 = ctx_.i32();
  std::vector<interp::RtValue> args = {interp::RtValue::ofInt(i32, 2147483647),
                                       interp::RtValue::ofInt(i32, 1)};
  // add %a, %a evaluated on two different values: operands come from the span.
  auto r = interp::evalPure(*ops[0], args);
  ASSERT_TRUE(r);
  EXPECT_EQ(interp::format((*r)[0]), "-2147483648");
  std::vector<interp::RtValue> divByZero = {interp::RtValue::ofInt(i32, 7), interp::RtValue::ofInt(i32, 0)};
  EXPECT_FALSE(interp::evalPure(*ops[1], divByZero));
  std::vector<interp::RtValue> f = {interp::RtValue::ofFloat(ctx_.f32(), 300.5)};
  r = interp::evalPure(*ops[2], f);
  ASSERT_TRUE(r);
  EXPECT_EQ(interp::format((*r)[0]), "255");
  interp::RtValue buf;
  buf.type = ops[3]->operand(0)->type();
  buf.buffer = 1;
  std::vector<interp::RtValue> loadArgs = {buf, interp::RtValue::ofInt(i32, 0)};
  EXPECT_FALSE(interp::evalPure(*ops[3], loadArgs));       // not pure
  EXPECT_FALSE(interp::evalPure(*ops[4], {&buf, 1}));       // pure, but needs memory
  r = interp::evalPure(*ops[5], {});
  ASSERT_TRUE(r);
  EXPECT_EQ(interp::format((*r)[0]), "-5");
  std::vector<interp::RtValue> cmp = {interp::RtValue::ofInt(i32, -3), interp::RtValue::ofInt(i32, 2)};
  r = interp::evalPure(*ops[6], cmp);
  ASSERT_TRUE(r);
  EXPECT_EQ(interp::format((*r)[0]), "true");
  EXPECT_FALSE(interp::evalPure(*ops[6], {cmp.data(), 1}));  // wrong operand count
  EXPECT_FALSE(interp::evalPure(*opsOf(m, "k")[0], {}));     // needs an invocation
}

TEST(InterpOpTable, EveryOpHasInterpreterSemantics) {
  for (const ir::OpInfo* info : ir::OpTable::get().all())
    EXPECT_NE(info->interp, nullptr) << "op '" << info->name << "' has no interpreter semantics";
  EXPECT_GE(ir::OpTable::get().all().size(), 80u);
}

}  // namespace
}  // namespace eph::test
