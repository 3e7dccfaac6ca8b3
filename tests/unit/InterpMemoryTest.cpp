// Interpreter semantics of buffers, atomics and host ops (ir/ops/Memory.cpp,
// ir/ops/Host.cpp), and the memory errors: out of bounds, uninitialised
// reads, use after free, double free, transfer length mismatch.
#include "tests/unit/InterpTestUtil.h"

namespace eph::test {
namespace {

using InterpMemory = InterpTest;

TEST_F(InterpMemory, StoreThenLoadAndLen) {
  EXPECT_EQ(runMain("host @main(%v: f32) -> (f32, u32, buffer<f32, host, linear>) {\n"
                    "  %n = const {value = 3} : u32\n"
                    "  %b = alloc %n : buffer<f32, host, linear>\n"
                    "  %i = const {value = 2} : i32\n"
                    "  store %b, %i, %v\n"
                    "  %x = load %b, %i : f32\n"
                    "  %len = buffer.len %b : u32\n"
                    "  return %x, %len, %b\n}\n",
                    {"-0.75"}),
            "-0.75, 3, [?, ?, -0.75]");
}

const char* kIndexed =
    "host @main(%i: i32) -> i32 {\n"
    "  %n = const {value = 8} : u32\n"
    "  %b = alloc %n : buffer<i32, host, linear>\n"
    "  %k = const {value = 5} : i32\n"
    "  store %b, %i, %k\n"
    "  %x = load %b, %i : i32\n"
    "  free %b\n"
    "  return %x\n}\n";

TEST_F(InterpMemory, OutOfBoundsStoreIsAnError) {
  load(kIndexed);
  EXPECT_EQ(run("main", {"7"}), "5");
  EXPECT_EQ(run("main", {"8"}),
            "error: test.eir:5:3: error: index 8 is out of bounds for a buffer of 8 elements");
  EXPECT_EQ(run("main", {"-1"}),
            "error: test.eir:5:3: error: index -1 is out of bounds for a buffer of 8 elements");
}

TEST_F(InterpMemory, OutOfBoundsLoadIsAnError) {
  load("host @main(%data: buffer<u32, host, read>, %i: u64) -> u32 {\n"
       "  %x = load %data, %i : u32\n"
       "  return %x\n}\n");
  EXPECT_EQ(run("main", {"[10, 20, 30]", "2"}), "30");
  EXPECT_EQ(run("main", {"[10, 20, 30]", "3"}),
            "error: test.eir:2:3: error: index 3 is out of bounds for a buffer of 3 elements");
  EXPECT_EQ(run("main", {"[10, 20, 30]", "18446744073709551615"}),
            "error: test.eir:2:3: error: index 18446744073709551615 is out of bounds for a buffer "
            "of 3 elements");
}

TEST_F(InterpMemory, UninitialisedReadNamesElementAndAllocationSite) {
  EXPECT_EQ(runMain("host @main() -> i32 {\n"
                    "  %n = const {value = 8} : u32\n"
                    "  %b = alloc %n : buffer<i32, host, linear>\n"
                    "  %i = const {value = 3} : u32\n"
                    "  %j = const {value = 4} : u32\n"
                    "  %v = const {value = 44} : i32\n"
                    "  store %b, %j, %v\n"
                    "  %x = load %b, %i : i32\n"
                    "  free %b\n"
                    "  return %x\n}\n"),
            "error: test.eir:8:3: error: read of uninitialised element 3 of a buffer of 8 allocated "
            "at test.eir:3:3");
}

TEST_F(InterpMemory, UseAfterFreeNamesTheAllocationSite) {
  EXPECT_EQ(runMain("host @main(%v: i32) -> i32 {\n"
                    "  %n = const {value = 2} : u32\n"
                    "  %b = alloc %n : buffer<i32, host, affine>\n"
                    "  %i = const {value = 1} : u32\n"
                    "  store %b, %i, %v\n"
                    "  free %b\n"
                    "  %x = load %b, %i : i32\n"
                    "  return %x\n}\n",
                    {"9"}),
            "error: test.eir:7:3: error: use of a freed buffer allocated at test.eir:3:3");
}

TEST_F(InterpMemory, DoubleFreeIsAnError) {
  EXPECT_EQ(runMain("host @main() {\n"
                    "  %n = const {value = 4} : u64\n"
                    "  %b = alloc %n : buffer<f64, device, affine>\n"
                    "  free %b\n"
                    "  free %b\n"
                    "  return\n}\n"),
            "error: test.eir:5:3: error: double free of a buffer allocated at test.eir:3:3");
}

TEST_F(InterpMemory, AllocOfNegativeCountIsAnError) {
  EXPECT_EQ(runMain("host @main(%n: i32) {\n"
                    "  %b = alloc %n : buffer<f64, host, linear>\n"
                    "  free %b\n"
                    "  return\n}\n",
                    {"-3"}),
            "error: test.eir:2:3: error: the element count is negative (-3)");
}

const char* kRoundTrip =
    "host @main(%src: buffer<i32, host, read>, %n: u32, %m: u32) -> buffer<i32, host, linear> {\n"
    "  %d = alloc %n : buffer<i32, device, linear>\n"
    "  h2d %d, %src\n"
    "  %h = alloc %m : buffer<i32, host, linear>\n"
    "  d2h %h, %d\n"
    "  free %d\n"
    "  return %h\n}\n";

TEST_F(InterpMemory, AllocBeyondTheInterpreterLimitIsAnError) {
  EXPECT_EQ(runMain("host @main(%n: u64) {\n"
                    "  %b = alloc %n : buffer<f64, host, linear>\n"
                    "  free %b\n"
                    "  return\n}\n",
                    {"100000000000"}),
            "error: test.eir:2:3: error: allocation of 100000000000 elements is larger than the "
            "interpreter's limit of 67108864");
}

TEST_F(InterpMemory, H2DAndD2HCopyElementsAndWrittenFlags) {
  load(kRoundTrip);
  EXPECT_EQ(run("main", {"[3, -1, 2147483647]", "3", "3"}), "[3, -1, 2147483647]");
  // An unwritten element has no value to upload: h2d refuses it (as every
  // device does), naming the element.
  EXPECT_EQ(runMain("host @main() -> buffer<i32, host, linear> {\n"
                    "  %n = const {value = 3} : u32\n"
                    "  %src = alloc %n : buffer<i32, host, linear>\n"
                    "  %i = const {value = 1} : u32\n"
                    "  %v = const {value = -6} : i32\n"
                    "  store %src, %i, %v\n"
                    "  %d = alloc %n : buffer<i32, device, linear>\n"
                    "  h2d %d, %src\n"
                    "  %h = alloc %n : buffer<i32, host, linear>\n"
                    "  d2h %h, %d\n"
                    "  free %d\n"
                    "  free %src\n"
                    "  return %h\n}\n"),
            "error: test.eir:8:3: error: element 0 of a buffer of 3 is copied to the device but was "
            "never written");
}

TEST_F(InterpMemory, TransferLengthMismatchIsAnError) {
  load(kRoundTrip);
  EXPECT_EQ(run("main", {"[1, 2, 3]", "4", "4"}),
            "error: test.eir:3:3: error: copies a buffer of 3 elements into a buffer of 4");
  EXPECT_EQ(run("main", {"[1, 2, 3]", "3", "2"}),
            "error: test.eir:5:3: error: copies a buffer of 3 elements into a buffer of 2");
}

// Runs one atomic op on element 1 of a buffer and returns (old, buffer).
std::string atomicProgram(const std::string& op, const std::string& type, bool cmpxchg = false) {
  return "host @main(%b: buffer<" + type + ", host, write>, %v: " + type + ", %w: " + type +
         ") -> (" + type + ", buffer<" + type + ", host, write>) {\n"
         "  %i = const {value = 1} : u32\n"
         "  %old = " + op + " %b, %i, %v" + (cmpxchg ? ", %w" : "") + " : " + type + "\n"
         "  return %old, %b\n}\n";
}

TEST_F(InterpMemory, AtomicAddReturnsTheOldValueAndWraps) {
  load(atomicProgram("atomic.add", "i32"));
  EXPECT_EQ(run("main", {"[0, 2147483647]", "1", "0"}), "2147483647, [0, -2147483648]");
  load(atomicProgram("atomic.add", "f32"));
  EXPECT_EQ(run("main", {"[0, 0.1]", "0.2", "0"}), "0.1, [0.0, 0.3]");
}

TEST_F(InterpMemory, AtomicMinMaxRespectSignedness) {
  load(atomicProgram("atomic.min", "i32"));
  EXPECT_EQ(run("main", {"[0, 5]", "-7", "0"}), "5, [0, -7]");
  load(atomicProgram("atomic.min", "u32"));
  EXPECT_EQ(run("main", {"[0, 5]", "4294967295", "0"}), "5, [0, 5]");
  load(atomicProgram("atomic.max", "u64"));
  EXPECT_EQ(run("main", {"[0, 5]", "18446744073709551615", "0"}), "5, [0, 18446744073709551615]");
  load(atomicProgram("atomic.max", "i64"));
  EXPECT_EQ(run("main", {"[0, 5]", "-1", "0"}), "5, [0, 5]");
}

TEST_F(InterpMemory, AtomicExchange) {
  load(atomicProgram("atomic.xchg", "u32"));
  EXPECT_EQ(run("main", {"[7, 8]", "9", "0"}), "8, [7, 9]");
}

TEST_F(InterpMemory, AtomicCompareExchangeSucceedsOnlyWhenEqual) {
  load(atomicProgram("atomic.cmpxchg", "i32", true));
  EXPECT_EQ(run("main", {"[1, -4]", "-4", "100"}), "-4, [1, 100]");  // expected matches: stored
  EXPECT_EQ(run("main", {"[1, -4]", "4", "100"}), "-4, [1, -4]");    // mismatch: unchanged
}

TEST_F(InterpMemory, AtomicOnUnwrittenElementIsAnError) {
  EXPECT_EQ(runMain("host @main() -> u32 {\n"
                    "  %n = const {value = 2} : u32\n"
                    "  %b = alloc %n : buffer<u32, host, linear>\n"
                    "  %i = const {value = 0} : u32\n"
                    "  %one = const {value = 1} : u32\n"
                    "  %old = atomic.add %b, %i, %one : u32\n"
                    "  free %b\n"
                    "  return %old\n}\n"),
            "error: test.eir:6:3: error: read of uninitialised element 0 of a buffer of 2 allocated "
            "at test.eir:3:3");
}

TEST_F(InterpMemory, WaitIsANoOpAfterCompletedWork) {
  EXPECT_EQ(runMain("host @main(%x: i32) -> i32 {\n"
                    "  wait\n"
                    "  return %x\n}\n",
                    {"12"}),
            "12");
}

}  // namespace
}  // namespace eph::test
