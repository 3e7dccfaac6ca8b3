#include "tests/support/RandomProgram.h"

#include <random>
#include <vector>

namespace eph::test {
namespace {

constexpr unsigned kInputLength = 256;  // a power of two: indices are masked into range

class Generator {
 public:
  Generator(uint64_t seed, const RandomProgramOptions& opts) : rng_(seed), opts_(opts) {
    static const unsigned kSizes[][2] = {{1, 1}, {4, 1}, {8, 1}, {16, 1}, {32, 1}, {64, 1}, {4, 4}, {8, 2}};
    auto& s = kSizes[below(8)];
    wx_ = s[0];
    wy_ = s[1];
    groups_ = 1 + below(4);
  }

  std::string program() {
    std::string kernel = kernelText();
    std::string host = hostText();
    return (calledExchanges_ ? kExchangeFunction : "") + kernel + tail_.kernels + host;
  }

 private:
  struct Val {
    std::string name, type;
  };

  unsigned below(unsigned n) { return unsigned(rng_() % n); }
  bool chance(unsigned percent) { return below(100) < percent; }
  std::string fresh() { return "%v" + std::to_string(next_++); }
  void line(const std::string& s) { out_ += std::string(2 * indent_, ' ') + s + "\n"; }

  std::string pick(const std::string& type) {
    std::vector<const Val*> of;
    for (const Val& v : pool_)
      if (v.type == type) of.push_back(&v);
    return of[below(unsigned(of.size()))]->name;
  }
  std::string def(const std::string& type, const std::string& rhs) {
    std::string n = fresh();
    line(n + " = " + rhs + " : " + type);
    pool_.push_back({n, type});
    return n;
  }
  std::string constant(const std::string& type, const std::string& value) {
    return def(type, "const {value = " + value + "}");
  }
  std::string numericType() { return opts_.floats && chance(35) ? "f32" : chance(60) ? "i32" : "u32"; }
  std::string anyType() { return chance(15) ? "bool" : numericType(); }

  // An index into the input buffers.
  std::string index() { return def("u32", "and " + pick("u32") + ", %mask"); }

  void intArith(const std::string& t) {
    static const char* const kOps[] = {"add", "sub", "mul", "and", "or", "xor", "shl", "shr", "min", "max", "div", "rem"};
    std::string op = kOps[below(12)];
    std::string a = pick(t), b = pick(t);
    if (op == "div" || op == "rem") b = def(t, "or " + b + ", " + (t == "i32" ? "%one_i" : "%one_u"));
    if (chance(20)) {
      def(t, std::string(chance(50) ? "neg " : chance(50) ? "abs " : "not ") + a);
      return;
    }
    def(t, op + " " + a + ", " + b);
  }

  void floatArith() {
    static const char* const kBinary[] = {"add", "sub", "mul", "div", "min", "max"};
    static const char* const kUnary[] = {"neg", "abs", "floor", "ceil", "sqrt", "sin", "exp"};
    if (chance(30)) {
      std::string op = kUnary[below(7)];
      std::string a = pick("f32");
      if (op == "sqrt") a = def("f32", "abs " + a);
      def("f32", op + " " + a);
      return;
    }
    def("f32", std::string(kBinary[below(6)]) + " " + pick("f32") + ", " + pick("f32"));
  }

  void compare() {
    static const char* const kOps[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    std::string t = numericType();
    def("bool", std::string(kOps[below(6)]) + " " + pick(t) + ", " + pick(t));
  }

  void castOrSelect() {
    std::string from = anyType(), to = anyType();
    if (chance(30)) {
      def(to, "select " + pick("bool") + ", " + pick(to) + ", " + pick(to));
      return;
    }
    if (from == to) return;
    def(to, "cast " + pick(from));
  }

  // A load at gid + c, guarded by the buffer's length: in bounds for some
  // workgroups and not for others.
  void guardedLoad() {
    std::string j = def("u32", "add %gid, " + constant("u32", std::to_string(below(300))));
    std::string ok = def("bool", "lt " + j + ", %inlen");
    std::string r = fresh();
    line(r + " = if " + ok + " : i32 {");
    ++indent_;
    line(fresh() + " = load %in, " + j + " : i32");
    line("yield %v" + std::to_string(next_ - 1));
    --indent_;
    line("} {");
    line("  yield %one_i");
    line("}");
    pool_.push_back({r, "i32"});
  }

  void load() {
    if (chance(25)) {
      guardedLoad();
      return;
    }
    std::string i = index();
    if (opts_.floats && chance(40)) def("f32", "load %fin, " + i);
    else def("i32", "load %in, " + i);
  }

  void atomic() {
    std::string slot = def("u32", "and " + pick("u32") + ", %seven");
    if (opts_.floats && chance(30)) {
      std::string small = def("u32", "and " + pick("u32") + ", %fifteen");
      std::string f = def("f32", "cast " + small);
      line(fresh() + " = atomic.add %facc, " + slot + ", " + f + " : f32");
      return;
    }
    // add, min and max commute only with themselves: each has its own 8 slots.
    static const char* const kOps[] = {"atomic.add", "atomic.min", "atomic.max"};
    unsigned k = below(3);
    if (k) slot = def("u32", "add " + slot + ", " + (k == 1 ? "%eight" : "%sixteen"));
    line(fresh() + " = " + kOps[k] + " %acc, " + slot + ", " + pick("i32") + " : i32");
  }

  // Every invocation publishes a value in workgroup memory and reads a
  // neighbour's after the barrier. Every second exchange calls
  // @exchange (kExchangeFunction) instead, so barriers in called functions
  // are covered too; both draw the same random numbers and define values of
  // the same types.
  void exchange() {
    if (exchanges_++ % 2) {
      std::string v = pick("i32");
      std::string j = def("u32", "add %lid, " + pick("u32"));
      std::string k = def("u32", "rem " + j + ", %wgsize");
      def("i32", "call %shared, %lid, " + v + ", " + k + " {callee = @exchange}");
      ++calledExchanges_;
      return;
    }
    line("barrier");
    line("store %shared, %lid, " + pick("i32"));
    line("barrier");
    std::string j = def("u32", "add %lid, " + pick("u32"));
    std::string k = def("u32", "rem " + j + ", %wgsize");
    def("i32", "load %shared, " + k);
  }
  static constexpr const char* kExchangeFunction =
      "device @exchange(%shared: buffer<i32, workgroup, write>, %lid: u32, %v: i32, %k: u32) -> i32 {\n"
      "  barrier\n"
      "  store %shared, %lid, %v\n"
      "  barrier\n"
      "  %r = load %shared, %k : i32\n"
      "  return %r\n"
      "}\n\n";

  // Runs `body` in a region, dropping the values it defined afterwards.
  template <class F>
  void region(F body) {
    size_t mark = pool_.size();
    ++indent_;
    body();
    --indent_;
    pool_.resize(mark);
  }

  void ifStmt(unsigned depth, bool uniform) {
    std::string t = anyType();
    bool uniformCond = uniform && opts_.barriers && chance(50);
    std::string c = uniformCond ? def("bool", "lt %wgid, " + constant("u32", std::to_string(below(4)))) : pick("bool");
    bool inner = uniform && uniformCond;
    std::string r = fresh();
    line(r + " = if " + c + " : " + t + " {");
    for (int arm = 0; arm < 2; ++arm) {
      if (arm) line("} {");
      region([&] {
        block(depth + 1, 2 + below(4), inner);
        line("yield " + pick(t));
      });
    }
    line("}");
    pool_.push_back({r, t});
  }

  void forStmt(unsigned depth, bool uniform) {
    std::string t = numericType();
    bool constantBounds = chance(60);
    std::string hi = constantBounds ? constant("u32", std::to_string(1 + below(4)))
                                    : def("u32", "and " + pick("u32") + ", %three");
    std::string init = pick(t);
    std::string r = fresh(), iv = fresh(), acc = fresh();
    line(r + " = for %zero, " + hi + ", %one_u, " + init + " : " + t + " { |" + iv + ": u32, " + acc + ": " + t + "|");
    region([&] {
      pool_.push_back({iv, "u32"});
      pool_.push_back({acc, t});
      block(depth + 1, 2 + below(4), uniform && constantBounds);
      line("yield " + pick(t));
    });
    line("}");
    pool_.push_back({r, t});
  }

  void statement(unsigned depth, bool uniform) {
    unsigned k = below(100);
    if (k < 30) intArith(chance(60) ? "i32" : "u32");
    else if (k < 42) opts_.floats ? floatArith() : intArith("i32");
    else if (k < 50) compare();
    else if (k < 60) castOrSelect();
    else if (k < 72) load();
    else if (k < 78 && opts_.atomics) atomic();
    else if (k < 84 && opts_.barriers && uniform) exchange();
    else if (k < 92 && depth < 2) ifStmt(depth, uniform);
    else if (depth < 2) forStmt(depth, uniform);
    else intArith("i32");
  }

  void block(unsigned depth, unsigned count, bool uniform) {
    for (unsigned i = 0; i < count; ++i) statement(depth, uniform);
  }

  // The pointwise chain (RandomProgramOptions::pointwise): its kernels, the
  // host lines that run it and the type of its last buffer.
  struct Tail {
    std::string kernels, host, type;
  };

  // The body of a pointwise kernel inside its guard: reads each of `loads`
  // at %i, computes with random pure ops and stores a value of `outType`
  // that depends on every load to %out at %i.
  void pointwiseBody(const std::vector<Val>& loads, const std::string& outType) {
    indent_ = 2;
    pool_ = {{"%i", "u32"}, {"%one_i", "i32"}, {"%one_u", "u32"}, {"%flag", "bool"}};
    if (opts_.floats) pool_.push_back({"%half", "f32"});
    std::vector<std::string> loaded;
    for (const Val& l : loads) loaded.push_back(def(l.type, "load " + l.name + ", %i"));
    def("i32", "cast %i");
    if (opts_.floats) def("f32", "cast %i");
    unsigned n = 2 + below(7);
    for (unsigned k = 0; k < n; ++k) {
      unsigned c = below(100);
      if (c < 40) intArith(chance(70) ? "i32" : "u32");
      else if (c < 65) opts_.floats ? floatArith() : intArith("i32");
      else if (c < 75) compare();
      else castOrSelect();
    }
    // Float adds here would make `(x - v) + v` likely, which a Vulkan driver
    // may simplify to x (ops are not NoContraction): max instead.
    std::string r = pick(outType);
    for (size_t j = 0; j < loads.size(); ++j) {
      std::string v = loads[j].type == outType ? loaded[j] : def(outType, "cast " + loaded[j]);
      r = def(outType, std::string(outType == "i32" && chance(50) ? "add " : "max ") + r + ", " + v);
    }
    line("store %out, %i, " + r);
    line("yield");
  }

  Tail pointwiseChain() {
    Tail t;
    unsigned len = 1 + below(kInputLength);  // the inputs are read at every index below it
    static const unsigned kWidths[] = {1, 4, 16, 64};
    unsigned chainWidth = kWidths[below(4)];
    auto hl = [&](const std::string& s) { t.host += "  " + s + "\n"; };
    hl("%pn = const {value = " + std::to_string(len) + "} : u32");
    for (unsigned w : kWidths)
      hl("%pg" + std::to_string(w) + " = const {value = " + std::to_string((len + w - 1) / w) + "} : u32");
    std::string cur, curType;  // the chain's last buffer
    std::vector<std::string> lateFrees;
    unsigned kernels = 2 + below(4);
    for (unsigned k = 0; k < kernels; ++k) {
      std::string K = std::to_string(k), name = "@pw" + K;
      bool vshape = chance(40);
      bool inPlace = !cur.empty() && vshape && chance(40);
      unsigned w = chance(80) ? chainWidth : kWidths[below(4)];
      std::string params;
      std::vector<std::string> args;
      std::vector<Val> loads;
      auto read = [&](const std::string& p, const std::string& type, const std::string& buffer) {
        params += (params.empty() ? "" : ", ") + p + ": buffer<" + type + ", device, read>";
        loads.push_back({p, type});
        args.push_back(buffer);
      };
      if (!cur.empty() && !inPlace) read("%a", curType, cur);
      if (cur.empty() || chance(50)) {
        bool f = opts_.floats && chance(50);
        read("%b", f ? "f32" : "i32", f ? "%dfin" : "%din");
      }
      std::string outType = inPlace ? curType : opts_.floats && chance(50) ? "f32" : "i32";
      params += (params.empty() ? "" : ", ") + std::string("%out: buffer<") + outType + ", device, write>";
      if (inPlace) {
        loads.push_back({"%out", outType});
        args.push_back(cur);
      } else {
        args.push_back("%p" + K);
        hl("%p" + K + " = alloc %pn : buffer<" + outType + ", device, linear>");
      }
      emitPointwise(t, name, vshape, w, params, loads, outType);
      dispatchPointwise(t, name, vshape, w, args, K);
      if (!inPlace && !cur.empty()) {
        if (chance(60)) hl("free " + cur);
        else lateFrees.push_back(cur);
      }
      if (!inPlace) cur = "%p" + K;
      curType = outType;
    }
    hl("%hp = alloc %pn : buffer<" + curType + ", host, linear>");
    hl("wait");
    hl("d2h %hp, " + cur);
    hl("free " + cur);
    for (const std::string& f : lateFrees) hl("free " + f);
    t.type = curType;
    return t;
  }

  void emitPointwise(Tail& t, const std::string& name, bool vshape, unsigned w, std::string params,
                     const std::vector<Val>& loads, const std::string& outType) {
    std::string saved = out_;
    out_.clear();
    indent_ = 1;
    line("%one_i = const {value = 1} : i32");
    line("%one_u = const {value = 1} : u32");
    line(std::string("%flag = const {value = ") + (chance(50) ? "true" : "false") + "} : bool");
    if (opts_.floats) line("%half = const {value = 0.5} : f32");
    if (vshape) {
      params += ", %grid.x: u32, %grid.y: u32, %grid.z: u32";
      line("%g0 = global_id {dim = 0} : u32");
      line("%c0 = lt %g0, %grid.x : bool");
      line("%g1 = global_id {dim = 1} : u32");
      line("%c1 = lt %g1, %grid.y : bool");
      line("%c01 = and %c0, %c1 : bool");
      line("%g2 = global_id {dim = 2} : u32");
      line("%c2 = lt %g2, %grid.z : bool");
      line("%inside = and %c01, %c2 : bool");
      line("if %inside {");
      line("  %i = global_id {dim = 0} : u32");
    } else {
      line("%i = global_id {dim = 0} : u32");
      line("%len = buffer.len %out : u32");
      line("%inside = lt %i, %len : bool");
      line("if %inside {");
    }
    pointwiseBody(loads, outType);
    indent_ = 1;
    line("} {");
    line("  yield");
    line("}");
    line("return");
    t.kernels += "kernel " + name + "(" + params + ") workgroup(" + std::to_string(w) + ", 1, 1)" +
                 (vshape ? " attributes {hidden_params = 3}" : "") + " {\n" + out_ + "}\n\n";
    out_ = saved;
  }

  void dispatchPointwise(Tail& t, const std::string& name, bool vshape, unsigned w,
                         const std::vector<std::string>& args, const std::string& k) {
    auto hl = [&](const std::string& s) { t.host += "  " + s + "\n"; };
    std::string list;
    for (const std::string& a : args) list += ", " + a;
    if (!vshape) {
      hl("dispatch %pg" + std::to_string(w) + ", %one, %one" + list + " {kernel = " + name + "}");
      return;
    }
    // The Ephapax frontend's workgroup count, (grid.x + W - 1) / W, which
    // vectorize recognises.
    hl("%wm" + k + " = const {value = " + std::to_string(w - 1) + "} : u32");
    hl("%w" + k + " = const {value = " + std::to_string(w) + "} : u32");
    hl("%ws" + k + " = add %pn, %wm" + k + " : u32");
    hl("%wg" + k + " = div %ws" + k + ", %w" + k + " : u32");
    hl("dispatch %wg" + k + ", %one, %one" + list + ", %pn, %one, %one {kernel = " + name + "}");
  }

  std::string kernelText() {
    out_.clear();
    indent_ = 1;
    std::string acc = "buffer<i32, device, write>";
    line("%shared = workgroup.alloc {size = " + std::to_string(wx_ * wy_) + "} : buffer<i32, workgroup, write>");
    line("%gx = global_id {dim = 0} : u32");
    line("%gy = global_id {dim = 1} : u32");
    line("%lx = local_id {dim = 0} : u32");
    line("%ly = local_id {dim = 1} : u32");
    line("%wgid = workgroup_id {dim = 0} : u32");
    line("%wgsize = const {value = " + std::to_string(wx_ * wy_) + "} : u32");
    line("%width = const {value = " + std::to_string(wx_ * groups_) + "} : u32");
    line("%sx = const {value = " + std::to_string(wx_) + "} : u32");
    line("%row = mul %gy, %width : u32");
    line("%gid = add %row, %gx : u32");
    line("%lrow = mul %ly, %sx : u32");
    line("%lid = add %lrow, %lx : u32");
    line("%mask = const {value = " + std::to_string(kInputLength - 1) + "} : u32");
    line("%zero = const {value = 0} : u32");
    line("%inlen = buffer.len %in : u32");
    line("%one_u = const {value = 1} : u32");
    line("%one_i = const {value = 1} : i32");
    line("%three = const {value = 3} : u32");
    line("%seven = const {value = 7} : u32");
    line("%fifteen = const {value = 15} : u32");
    line("%eight = const {value = 8} : u32");
    line("%sixteen = const {value = 16} : u32");
    pool_ = {{"%gid", "u32"}, {"%lid", "u32"}, {"%wgid", "u32"}, {"%zero", "u32"}, {"%one_i", "i32"}};
    static const char* const kInts[] = {"0", "1", "-1", "7", "-100", "2147483647", "-2147483648", "12345"};
    static const char* const kUints[] = {"0", "1", "3", "31", "32", "4294967295", "65536"};
    static const char* const kFloats[] = {"0.0", "1.0", "-2.5", "0.1", "1e30", "-0.0", "3.75"};
    for (int i = 0; i < 3; ++i) {
      constant("i32", kInts[below(8)]);
      constant("u32", kUints[below(7)]);
      if (opts_.floats) constant("f32", kFloats[below(7)]);
    }
    def("i32", "cast %gid");
    if (opts_.floats) def("f32", "cast %gid");
    constant("bool", chance(50) ? "true" : "false");
    block(0, opts_.statements, true);
    line("store %out, %gid, " + pick("i32"));
    if (opts_.floats) line("store %fout, %gid, " + pick("f32"));
    line("return");
    return "kernel @k(%in: buffer<i32, device, read>, %fin: buffer<f32, device, read>, %out: buffer<i32, device, write>, "
           "%fout: buffer<f32, device, write>, %acc: " + acc + ", %facc: buffer<f32, device, write>) workgroup(" +
           std::to_string(wx_) + ", " + std::to_string(wy_) + ", 1) {\n" + out_ + "}\n\n";
  }

  std::string hostText() {
    unsigned n = wx_ * wy_ * groups_;
    std::string N = std::to_string(n), L = std::to_string(kInputLength);
    std::string a = std::to_string(int(below(2000)) - 1000), b = std::to_string(int(below(1 << 30)) - (1 << 29));
    if (opts_.pointwise) tail_ = pointwiseChain();
    std::string tailResult = opts_.pointwise ? ", buffer<" + tail_.type + ", host, linear>" : "";
    return R"(host @main() -> (buffer<i32, host, linear>, buffer<f32, host, linear>, buffer<i32, host, linear>, buffer<f32, host, linear>)" +
           tailResult + R"() {
  %n = const {value = )" + N + R"(} : u32
  %len = const {value = )" + L + R"(} : u32
  %eight = const {value = 8} : u32
  %accn = const {value = 24} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %groups = const {value = )" + std::to_string(groups_) + R"(} : u32
  %a = const {value = )" + a + R"(} : i32
  %b = const {value = )" + b + R"(} : i32
  %scale = const {value = 0.37} : f32
  %zi = const {value = 0} : i32
  %zf = const {value = 0.0} : f32
  %hin = alloc %len : buffer<i32, host, linear>
  %hfin = alloc %len : buffer<f32, host, linear>
  for %zero, %len, %one { |%i: u32|
    %ii = cast %i : i32
    %m = mul %ii, %a : i32
    %v = add %m, %b : i32
    store %hin, %i, %v
    %f = cast %v : f32
    %g = mul %f, %scale : f32
    store %hfin, %i, %g
    yield
  }
  %hout = alloc %n : buffer<i32, host, linear>
  %hfout = alloc %n : buffer<f32, host, linear>
  for %zero, %n, %one { |%i: u32|
    store %hout, %i, %zi
    store %hfout, %i, %zf
    yield
  }
  %hacc = alloc %accn : buffer<i32, host, linear>
  %hfacc = alloc %eight : buffer<f32, host, linear>
  for %zero, %accn, %one { |%i: u32|
    store %hacc, %i, %zi
    yield
  }
  for %zero, %eight, %one { |%i: u32|
    store %hfacc, %i, %zf
    yield
  }
  %din = alloc %len : buffer<i32, device, linear>
  %dfin = alloc %len : buffer<f32, device, linear>
  %dout = alloc %n : buffer<i32, device, linear>
  %dfout = alloc %n : buffer<f32, device, linear>
  %dacc = alloc %accn : buffer<i32, device, linear>
  %dfacc = alloc %eight : buffer<f32, device, linear>
  h2d %din, %hin
  h2d %dfin, %hfin
  h2d %dout, %hout
  h2d %dfout, %hfout
  h2d %dacc, %hacc
  h2d %dfacc, %hfacc
  dispatch %groups, %one, %one, %din, %dfin, %dout, %dfout, %dacc, %dfacc {kernel = @k}
  wait
  d2h %hout, %dout
  d2h %hfout, %dfout
  d2h %hacc, %dacc
  d2h %hfacc, %dfacc
)" + tail_.host + R"(  free %hin
  free %hfin
  free %din
  free %dfin
  free %dout
  free %dfout
  free %dacc
  free %dfacc
  return %hout, %hfout, %hacc, %hfacc)" + std::string(opts_.pointwise ? ", %hp" : "") + R"(
}
)";
  }

  std::mt19937_64 rng_;
  RandomProgramOptions opts_;
  unsigned wx_ = 1, wy_ = 1, groups_ = 1;
  std::vector<Val> pool_;
  std::string out_;
  unsigned indent_ = 1, next_ = 0;
  unsigned exchanges_ = 0, calledExchanges_ = 0;
  Tail tail_;
};

}  // namespace

std::string generateRandomProgram(uint64_t seed, const RandomProgramOptions& opts) {
  return Generator(seed, opts).program();
}

}  // namespace eph::test
