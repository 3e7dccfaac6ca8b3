// `ephc onnx-test DIR...`: runs ONNX backend-test directories (model.onnx and
// test_data_set_*/input_N.pb, output_N.pb, as libonnx-testdata keeps them)
// through the ONNX importer on a target and compares each output with the
// backend test runner's tolerances (rtol 1e-3, atol 1e-7; dtypes and shapes
// exactly). Each test runs in a forked child with a timeout, so a crash or a
// hang is a failing test, never the runner's. --expect FILE makes a test in
// the list that fails an error (exit 1) and reports new passes; --doc writes
// docs/onnx.md from result files.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "tools/ephc/Driver.h"

#ifdef EPH_HAVE_ONNX
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Run.h"
#include "frontends/tensor/onnx/Frontend.h"
#include "frontends/tensor/onnx/Onnx.h"
#include "runtime/Device.h"
#endif

namespace eph::ephc {

CommandSpec onnxTestSpec() {
  return {
      .name = "onnx-test",
      .operands = "DIR...",
      .summary = "Run ONNX backend-test directories and compare with their expected outputs.",
      .description =
          "Each DIR is a test (model.onnx and test_data_set_N/{input,output}_K.pb) or a\n"
          "folder of tests (a suite, e.g. /usr/share/libonnx-testdata/data/node). Each\n"
          "test is imported, lowered and run on --target in a forked child with a\n"
          "timeout, and every output is compared as ONNX's backend test runner does:\n"
          "the same dtype and shape, and |got - want| <= atol + rtol*|want| (NaN equals\n"
          "NaN). One line per test (PASS/FAIL name: reason), then a summary; exit 0\n"
          "when every test passes. Tests are named SUITE/TEST (the folder names).\n"
          "--expect FILE: the tests expected to pass (one name a line); a test in it\n"
          "that fails is an error, one that fails and is not in it is not, and a new\n"
          "pass is reported. --write-passes FILE writes the passing names;\n"
          "--results FILE writes name, PASS|FAIL, reason and ops per line (tab-separated).\n"
          "--doc FILE (with --from TARGET=RESULTS, repeatable) writes docs/onnx.md: every\n"
          "ONNX op with its status and every failing test with its reason. A missing\n"
          "DIR skips (exit 77) unless EPH_REQUIRE_ONNX_DATA=1; so does a target\n"
          "without a device unless EPH_REQUIRE_VULKAN=1.",
      .options =
          {
              {"--target", "NAME", "interp, cpu or vulkan (default cpu)"},
              {"--expect", "FILE", "the tests expected to pass: one that fails is an error"},
              {"--list", "", "list the tests without running them"},
              {"--shard", "K/N", "run the K-th (1-based) of N interleaved shards of the sorted tests"},
              {"--filter", "TEXT", "only the tests whose name contains TEXT"},
              {"--timeout", "SECONDS", "per test (default 20)"},
              {"--rtol", "R", "relative tolerance (default 1e-3, ONNX's)"},
              {"--atol", "A", "absolute tolerance (default 1e-7, ONNX's; a whole model's float32 outputs near 0 need about 1e-5)"},
              {"--jobs", "N", "tests run at once (default 1)"},
              {"--results", "FILE", "write name<TAB>PASS|FAIL<TAB>reason<TAB>ops per test"},
              {"--write-passes", "FILE", "write the names of the passing tests, sorted"},
              {"--doc", "FILE", "write docs/onnx.md from --from result files (runs nothing)"},
              {"--from", "TARGET=FILE", "a --results file of a target, for --doc", true},
              {"--quiet", "", "print only failures and the summary"},
          },
      .minOperands = 0,
      .maxOperands = 1000,
  };
}

#ifndef EPH_HAVE_ONNX

int runOnnxTestCommand(Session& s, std::span<const std::string> argv) {
  return s.fail("onnx-test: this ephc was built without libonnx-dev");
}

#else

namespace {

namespace fs = std::filesystem;
using tensor::HostTensor;

struct TestCase {
  std::string name;  // suite/test
  fs::path dir;
};

struct Result {
  bool pass = false;
  std::string reason;
  std::string ops;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string oneLine(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  if (s.size() > 400) s = s.substr(0, 400) + "...";
  return s;
}

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string indexText(const tensor::Shape& shape, int64_t i) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return tensor::shapeText(idx);
}

// ONNX's backend runner's tolerances by default (--rtol, --atol).
struct Tolerance {
  double rtol = 1e-3, atol = 1e-7;
};

// "" when `got` matches `want` as the backend runner compares.
std::string compare(const HostTensor& got, const HostTensor& want, const Tolerance& tol) {
  if (got.dtype != want.dtype)
    return "dtype " + std::string(tensor::dtypeName(got.dtype)) + ", want " + std::string(tensor::dtypeName(want.dtype));
  if (got.shape != want.shape) return "shape " + tensor::shapeText(got.shape) + ", want " + tensor::shapeText(want.shape);
  const double rtol = tol.rtol, atol = tol.atol;
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < got.size(); ++i) {
    bool ok;
    if (tensor::isFloat(got.dtype)) {
      double g = got.get(i), w = want.get(i);
      if (std::isnan(w) || std::isnan(g)) ok = std::isnan(w) && std::isnan(g);
      else if (std::isinf(w) || std::isinf(g)) ok = g == w;
      else ok = std::fabs(g - w) <= atol + rtol * std::fabs(w);
    } else {
      ok = got.getInt(i) == want.getInt(i);
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (!bad) return "";
  bool f = tensor::isFloat(got.dtype);
  return std::to_string(bad) + " of " + std::to_string(got.size()) + " elements differ; the first at " +
         indexText(got.shape, first) + ": got " + (f ? num(got.get(first)) : std::to_string(got.getInt(first))) +
         ", want " + (f ? num(want.get(first)) : std::to_string(want.getInt(first)));
}

std::string errorText(const Error& e) { return (e.code.empty() ? "" : e.code + " ") + e.message; }

std::string modelOps(const std::string& bytes) {
  ::onnx::ModelProto m;
  if (!m.ParseFromArray(bytes.data(), int(bytes.size()))) return "";
  std::set<std::string> ops;
  for (const auto& n : m.graph().node()) ops.insert(n.op_type());
  std::string s;
  for (const auto& o : ops) s += (s.empty() ? "" : ",") + o;
  return s;
}

// Runs one test in this process (the child).
Result runTest(const TestCase& t, const std::string& target, const Tolerance& tol) {
  Result r;
  std::string bytes = slurp(t.dir / "model.onnx");
  r.ops = modelOps(bytes);
  std::vector<fs::path> sets;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(t.dir, ec))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return r.reason = "no test_data_set_* directory", r;
  auto device = runtime::openDevice(target);
  if (!device) return r.reason = "cannot open the " + target + " device: " + device.error().message, r;
  std::string set0;
  // A data file that is not a tensor (a sequence, an optional, strings): the
  // model's own error when it has one (its inputs are not tensors), else the file's.
  auto dataError = [&](const Error& e) {
    auto m = tensor::onnx::importModel(bytes, {.baseDir = t.dir.string()});
    std::string why = m ? errorText(e) : errorText(m.error());
    for (size_t at; (at = why.find(set0)) != std::string::npos;) why.erase(at, set0.size());
    return why;
  };
  for (const fs::path& set : sets) {
    set0 = (t.dir / "").string();
    auto inputs = tensor::onnx::readDataSet(set.string(), "input");
    if (!inputs) return r.reason = dataError(inputs.error()), r;
    auto outputs = tensor::onnx::readDataSet(set.string(), "output");
    if (!outputs) return r.reason = dataError(outputs.error()), r;
    // Bind by position over the graph inputs that are not initializers.
    ::onnx::ModelProto m;
    if (!m.ParseFromArray(bytes.data(), int(bytes.size())))
      return r.reason = "E400 not an ONNX model: the protobuf does not parse", r;
    std::set<std::string> inits;
    for (const auto& i : m.graph().initializer()) inits.insert(i.name());
    std::vector<std::string> names;
    for (const auto& i : m.graph().input())
      if (!inits.count(i.name())) names.push_back(i.name());
    tensor::onnx::ImportOptions opts;
    opts.baseDir = t.dir.string();
    for (size_t k = 0; k < inputs->size() && k < names.size(); ++k) opts.given[names[k]] = (*inputs)[k];
    auto model = tensor::onnx::importModel(bytes, opts);
    if (!model) return r.reason = errorText(model.error()), r;
    std::vector<HostTensor> ins;
    for (const std::string& n : model->inputs) {
      auto it = opts.given.find(n);
      if (it == opts.given.end()) return r.reason = "E403 input '" + n + "' has no input_N.pb", r;
      ins.push_back(it->second);
    }
    ir::Context ctx;
    auto c = tensor::lower(ctx, *model->program);
    if (!c) return r.reason = "E402 " + c.error().message, r;
    auto got = tensor::run(**device, *model->program, *c, ins);
    if (!got) return r.reason = "run: " + got.error().message, r;
    if (got->size() != outputs->size())
      return r.reason = std::to_string(got->size()) + " outputs, want " + std::to_string(outputs->size()), r;
    for (size_t k = 0; k < got->size(); ++k)
      if (std::string why = compare((*got)[k], (*outputs)[k], tol); !why.empty())
        return r.reason = "output " + std::to_string(k) + " ('" + model->outputs[k] + "'): " + why +
                          (sets.size() > 1 ? " (" + set.filename().string() + ")" : ""),
               r;
  }
  r.pass = true;
  return r;
}

struct Child {
  pid_t pid;
  int fd;
  size_t index;
  std::chrono::steady_clock::time_point start;
  std::string buffer;
};

bool writeAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return false;
    off += size_t(n);
  }
  return true;
}

Child spawn(const std::vector<TestCase>& tests, size_t i, const std::string& target, const Tolerance& tol) {
  int p[2];
  if (pipe(p) != 0) return {-1, -1, i, {}, {}};
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    // The child's stdout/stderr: quiet, so that one test's noise does not mix with the report.
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    Result r = runTest(tests[i], target, tol);
    writeAll(p[1], std::string(r.pass ? "PASS" : "FAIL") + "\t" + oneLine(r.reason) + "\t" + r.ops + "\n");
    close(p[1]);
    _exit(0);
  }
  close(p[1]);
  return {pid, p[0], i, std::chrono::steady_clock::now(), {}};
}

// Runs every test, `jobs` at a time, each with `timeout` seconds.
std::vector<Result> runAll(const std::vector<TestCase>& tests, const std::string& target, int jobs, double timeout,
                           const Tolerance& tol, const std::function<void(size_t, const Result&)>& done) {
  std::vector<Result> results(tests.size());
  std::vector<Child> running;
  size_t next = 0;
  auto finish = [&](Child& c, Result r) {
    results[c.index] = r;
    done(c.index, r);
  };
  while (next < tests.size() || !running.empty()) {
    while (int(running.size()) < jobs && next < tests.size()) {
      Child c = spawn(tests, next++, target, tol);
      if (c.pid < 0) {
        Result r;
        r.reason = "cannot fork";
        finish(c, r);
        continue;
      }
      running.push_back(std::move(c));
    }
    std::vector<pollfd> fds;
    for (Child& c : running) fds.push_back({c.fd, POLLIN, 0});
    poll(fds.data(), fds.size(), 100);
    for (size_t k = 0; k < running.size();) {
      Child& c = running[k];
      bool closed = false;
      if (fds.size() > k && (fds[k].revents & (POLLIN | POLLHUP | POLLERR))) {
        char buf[4096];
        ssize_t n = read(c.fd, buf, sizeof buf);
        if (n > 0) c.buffer.append(buf, size_t(n));
        else closed = true;
      }
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.start).count();
      if (!closed && secs > timeout) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, nullptr, 0);
        close(c.fd);
        Result r;
        r.reason = "timed out after " + num(timeout) + " s";
        finish(c, r);
        running.erase(running.begin() + long(k));
        fds.erase(fds.begin() + long(k));
        continue;
      }
      if (closed) {
        int status = 0;
        waitpid(c.pid, &status, 0);
        close(c.fd);
        Result r;
        size_t t1 = c.buffer.find('\t'), t2 = t1 == std::string::npos ? t1 : c.buffer.find('\t', t1 + 1);
        if (t2 != std::string::npos) {
          r.pass = c.buffer.substr(0, t1) == "PASS";
          r.reason = c.buffer.substr(t1 + 1, t2 - t1 - 1);
          r.ops = c.buffer.substr(t2 + 1);
          while (!r.ops.empty() && r.ops.back() == '\n') r.ops.pop_back();
        } else if (WIFSIGNALED(status)) {
          r.reason = "crashed (signal " + std::to_string(WTERMSIG(status)) + ": " + strsignal(WTERMSIG(status)) + ")";
        } else {
          r.reason = "the child exited with status " + std::to_string(WEXITSTATUS(status)) + " without a result";
        }
        finish(c, r);
        running.erase(running.begin() + long(k));
        fds.erase(fds.begin() + long(k));
        continue;
      }
      ++k;
    }
  }
  return results;
}

std::set<std::string> readList(const std::string& path, bool& ok) {
  std::set<std::string> out;
  std::ifstream in(path);
  ok = bool(in);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty() && line[0] != '#') out.insert(line);
  }
  return out;
}

// ---- docs/onnx.md ----------------------------------------------------------------

struct Row {
  bool pass;
  std::string reason, ops;
};

int writeDoc(Session& s, const ParsedArgs& args) {
  std::vector<std::pair<std::string, std::map<std::string, Row>>> targets;
  for (const std::string& spec : args.all("--from")) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) return s.fail("onnx-test: --from wants TARGET=FILE, got '" + spec + "'");
    std::ifstream in(spec.substr(eq + 1));
    if (!in) return s.fail("onnx-test: cannot read '" + spec.substr(eq + 1) + "'");
    std::map<std::string, Row> rows;
    std::string line;
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      size_t start = 0;
      for (;;) {
        size_t t = line.find('\t', start);
        f.push_back(line.substr(start, t == std::string::npos ? std::string::npos : t - start));
        if (t == std::string::npos) break;
        start = t + 1;
      }
      if (f.size() < 3) continue;
      rows[f[0]] = {f[1] == "PASS", f[2], f.size() > 3 ? f[3] : ""};
    }
    targets.push_back({spec.substr(0, eq), std::move(rows)});
  }
  if (targets.empty()) return s.fail("onnx-test: --doc needs --from TARGET=RESULTS files");
  std::ostringstream o;
  o << "# ONNX support\n\n"
       "Generated by `ninja onnx-doc` (`ephc onnx-test --doc`) from runs of\n"
       "`ephc onnx-test` over Debian's libonnx-testdata (ONNX 1.12: the `node`,\n"
       "`pytorch-converted` and `pytorch-operator` suites); do not edit by hand.\n"
       "The importer is `frontends/tensor/onnx/` (docs/tensor.md has the tensor ops it\n"
       "maps to); `ephc check|lower|run MODEL.onnx` use it, and\n"
       "`tests/onnx/expected-pass-<target>.txt` are the tests each ctest expects to pass\n"
       "(`ninja onnx-expect` regenerates them).\n\n"
       "```\n"
       "ephc check model.onnx                     # import and lower; E400-E403 on errors\n"
       "ephc lower model.onnx --emit=ir           # the host function and its kernels\n"
       "ephc run model.onnx --inputs DIR --target=vulkan          # DIR/input_0.pb, ...; prints the outputs\n"
       "ephc run model.onnx --input x=x.npy --save-outputs OUT     # OUT/output_0.pb, ... (TensorProto)\n"
       "ephc onnx-test /usr/share/libonnx-testdata/data/node --target=cpu --jobs 2\n"
       "```\n\n"
       "Opsets up to 17 of the default domain (7 to 17, and the opset-6 models of the\n"
       "PyTorch suites: legacy `broadcast`/`axis` of binary ops, PRelu-6's per-channel\n"
       "slope). Each op has one table entry (`OnnxOps.cpp`: the opsets it maps, the\n"
       "attributes it understands, a mapping function); an attribute it does not know\n"
       "is an error, never ignored.\n\n"
       "Shapes are static: Shape, Size, ConstantOfShape, Range, EyeLike and every node\n"
       "whose inputs are all constants are folded at import (small ones run on the\n"
       "reference interpreter), so shape-like inputs (Reshape's shape, Slice's starts,\n"
       "TopK's K, Resize's scales, ...) must be constants after folding. An input whose\n"
       "value is given at import (`ephc run --inputs`, `ephc onnx-test`) and has at\n"
       "most 16 elements specialises the shape-like arguments it feeds, as backend\n"
       "tests pass them as graph inputs; data computed from it is never folded, so\n"
       "every test's arithmetic runs on the target. Multi-output ops map to several\n"
       "tensor ops (Split to slices, TopK to topk and topk_indices, LSTM's Y, Y_h, Y_c).\n\n"
       "A symbolic or unknown first dimension of a graph input not given at import\n"
       "(`ephc check|lower`, `ephc run --dynamic`) is the dynamic first dimension N,\n"
       "a run-time value (docs/tensor.md, \"Dynamic dimensions\"): one module for every\n"
       "batch size. Shape of a tensor with N folds to a nominal extent that Reshape\n"
       "turns back into N; any other symbolic dimension needs the input given.\n\n"
       "Initializers may keep their data in external files (as PyTorch 2 exports\n"
       "models): read from the model's folder at their offset and length; a location\n"
       "outside the folder is an error (E400). Beyond the suites, a BERT-like encoder\n"
       "exported from PyTorch (`bench/tensor/bert_export.py`) runs in ctest\n"
       "(`onnx-bert-*`, with `--atol=1e-5`) on every target.\n\n"
       "Errors: E400 (not a readable model), E401 (unsupported op, attribute, dtype,\n"
       "opset or dynamic shape), E402 (invalid graph), E403 (a wrong run input);\n"
       "docs/errors.md. A test passes when every output has the expected dtype and\n"
       "shape and |got - want| <= 1e-7 + 1e-3·|want| (NaN equal to NaN), as ONNX's\n"
       "backend test runner compares.\n\n";
  // Summary.
  o << "## Summary\n\n| suite |";
  for (auto& [t, rows] : targets) o << " " << t << " |";
  o << "\n|---|";
  for (size_t i = 0; i < targets.size(); ++i) o << "---|";
  o << "\n";
  std::set<std::string> suites;
  for (auto& [t, rows] : targets)
    for (auto& [n, r] : rows) suites.insert(n.substr(0, n.find('/')));
  for (const std::string& suite : suites) {
    o << "| " << suite << " |";
    for (auto& [t, rows] : targets) {
      int pass = 0, all = 0;
      for (auto& [n, r] : rows)
        if (n.substr(0, n.find('/')) == suite) all++, pass += r.pass;
      o << " " << pass << " / " << all << " |";
    }
    o << "\n";
  }
  // Ops.
  std::map<std::string, std::vector<std::string>> opTests;  // op -> node tests using it
  for (auto& [n, r] : targets[0].second) {
    std::string ops = r.ops;
    size_t start = 0;
    while (start < ops.size()) {
      size_t c = ops.find(',', start);
      opTests[ops.substr(start, c == std::string::npos ? std::string::npos : c - start)].push_back(n);
      if (c == std::string::npos) break;
      start = c + 1;
    }
  }
  std::map<std::string, int> latest;
  for (const auto& schema : ::onnx::OpSchemaRegistry::get_all_schemas_with_history())
    if (schema.domain().empty() && schema.SinceVersion() <= 17 && !schema.Deprecated())
      latest[schema.Name()] = std::max(latest[schema.Name()], schema.SinceVersion());
  std::map<std::string, std::string> support;
  for (const auto& op : tensor::onnx::supportedOps()) {
    std::string range = op.until >= 99 ? "opset " + std::to_string(op.since) + "+"
                                       : "opsets " + std::to_string(op.since) + "-" + std::to_string(op.until);
    support[op.name] += (support[op.name].empty() ? "" : ", ") + range;
  }
  // The other domains' ops the importer maps (ai.onnx.preview.training's
  // optimizers), by their qualified names; their tests name them unqualified.
  for (const auto& [name, range] : support)
    if (name.find('.') != std::string::npos) latest[name] = 0;
  o << "\n## Ops\n\nEvery op of the default domain up to opset 17, and the ops of other domains\n"
       "the importer maps (by qualified name): whether the importer maps it (and at\n"
       "which opsets), and how many of the tests that use it pass.\n\n| op | importer |";
  for (auto& [t, rows] : targets) o << " " << t << " |";
  o << "\n|---|---|";
  for (size_t i = 0; i < targets.size(); ++i) o << "---|";
  o << "\n";
  for (auto& [op, since] : latest) {
    o << "| " << op << " | " << (support.count(op) ? support[op] : "not supported") << " |";
    for (auto& [t, rows] : targets) {
      int pass = 0, all = 0;
      for (const std::string& n : opTests[op.substr(op.rfind('.') + 1)])
        if (auto it = rows.find(n); it != rows.end()) all++, pass += it->second.pass;
      o << " " << (all ? std::to_string(pass) + " / " + std::to_string(all) : "") << " |";
    }
    o << "\n";
  }
  // Failures.
  o << "\n## Failing tests\n\nEvery test that fails on some target, with the reason (the same reason on\n"
       "every target is given once).\n\n| test | reason |\n|---|---|\n";
  std::set<std::string> names;
  for (auto& [t, rows] : targets)
    for (auto& [n, r] : rows) names.insert(n);
  auto esc = [](std::string s) {
    std::string out;
    for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  for (const std::string& n : names) {
    std::map<std::string, std::vector<std::string>> byReason;
    bool anyFail = false;
    for (auto& [t, rows] : targets) {
      auto it = rows.find(n);
      if (it == rows.end()) continue;
      if (!it->second.pass) anyFail = true;
      byReason[it->second.pass ? "passes" : it->second.reason].push_back(t);
    }
    if (!anyFail) continue;
    std::string cell;
    if (byReason.size() == 1) cell = esc(byReason.begin()->first);
    else
      for (auto& [reason, ts] : byReason) {
        std::string who;
        for (auto& t : ts) who += (who.empty() ? "" : ", ") + t;
        cell += (cell.empty() ? "" : "<br>") + who + ": " + esc(reason);
      }
    o << "| " << n << " | " << cell << " |\n";
  }
  std::ofstream out(args.get("--doc"));
  out << o.str();
  if (!out) return s.fail("onnx-test: cannot write '" + args.get("--doc") + "'");
  return 0;
}

}  // namespace

int runOnnxTestCommand(Session& s, std::span<const std::string> argv) {
  CommandSpec spec = onnxTestSpec();
  auto args = parseArgs(spec, argv);
  if (!args) return s.report(args.error());
  if (args->help) return s.io.out << helpText(spec), 0;
  if (args->has("--doc")) return writeDoc(s, *args);
  if (args->operands.empty()) return s.fail("onnx-test: give one or more test directories (see 'ephc onnx-test --help')");
  const char* require = std::getenv("EPH_REQUIRE_ONNX_DATA");
  bool requireData = require && std::string(require) == "1";
  std::vector<TestCase> tests;
  for (const std::string& d : args->operands) {
    std::error_code ec;
    fs::path dir(d);
    if (!fs::is_directory(dir, ec)) {
      if (requireData) return s.fail("onnx-test: '" + d + "' is not a directory (EPH_REQUIRE_ONNX_DATA=1)");
      s.io.out << "onnx-test: skipped: '" << d << "' is absent (install libonnx-testdata)\n";
      return 77;
    }
    if (fs::exists(dir / "model.onnx", ec)) {
      fs::path abs = fs::absolute(dir, ec);
      tests.push_back({abs.parent_path().filename().string() + "/" + abs.filename().string(), dir});
      continue;
    }
    std::vector<TestCase> inSuite;
    for (auto& e : fs::directory_iterator(dir, ec))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx"))
        inSuite.push_back({fs::absolute(dir).lexically_normal().filename().string() + "/" + e.path().filename().string(), e.path()});
    if (inSuite.empty()) return s.fail("onnx-test: '" + d + "' has no tests (no model.onnx in it or its folders)");
    tests.insert(tests.end(), inSuite.begin(), inSuite.end());
  }
  std::sort(tests.begin(), tests.end(), [](const TestCase& a, const TestCase& b) { return a.name < b.name; });
  if (args->has("--filter")) {
    std::string f = args->get("--filter");
    std::erase_if(tests, [&](const TestCase& t) { return t.name.find(f) == std::string::npos; });
  }
  if (args->has("--shard")) {
    std::string sh = args->get("--shard");
    int k = 0, n = 0;
    if (std::sscanf(sh.c_str(), "%d/%d", &k, &n) != 2 || n < 1 || k < 1 || k > n)
      return s.fail("onnx-test: --shard wants K/N with 1 <= K <= N, got '" + sh + "'");
    std::vector<TestCase> keep;
    for (size_t i = 0; i < tests.size(); ++i)
      if (int(i % size_t(n)) == k - 1) keep.push_back(tests[i]);
    tests = std::move(keep);
  }
  if (args->has("--list")) {
    for (const TestCase& t : tests) s.io.out << t.name << "\n";
    return 0;
  }
  std::string target = args->get("--target", "cpu");
  if (target != "interp" && target != "cpu" && target != "vulkan")
    return s.fail("onnx-test: --target must be interp, cpu or vulkan, not '" + target + "'");
  double timeout = 20;
  if (args->has("--timeout")) timeout = std::atof(args->get("--timeout").c_str());
  Tolerance tol;
  for (auto [flag, value] : {std::pair{"--rtol", &tol.rtol}, std::pair{"--atol", &tol.atol}})
    if (args->has(flag)) {
      const std::string text = args->get(flag);
      char* end = nullptr;
      *value = std::strtod(text.c_str(), &end);
      if (text.empty() || *end || !(*value >= 0))
        return s.fail(std::string("onnx-test: ") + flag + " must be a number >= 0, not '" + text + "'");
    }
  int jobs = args->has("--jobs") ? std::max(1, std::atoi(args->get("--jobs").c_str())) : 1;
  std::set<std::string> expected;
  bool haveExpect = args->has("--expect");
  if (haveExpect) {
    bool ok;
    expected = readList(args->get("--expect"), ok);
    if (!ok) return s.fail("onnx-test: cannot read '" + args->get("--expect") + "'");
  }
  // Whether the target has a device: probe in a child (Vulkan does not survive fork).
  if (target != "interp") {
    pid_t pid = fork();
    if (pid == 0) {
      int devnull = open("/dev/null", O_WRONLY);
      if (devnull >= 0) dup2(devnull, 2);
      _exit(runtime::openDevice(target) ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      const char* rv = std::getenv("EPH_REQUIRE_VULKAN");
      if (target == "vulkan" && !(rv && std::string(rv) == "1")) {
        s.io.out << "onnx-test: skipped: no " << target << " device\n";
        return 77;
      }
      return s.fail("onnx-test: cannot open a " + target + " device");
    }
  }
  bool quiet = args->has("--quiet");
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Result> results = runAll(tests, target, jobs, timeout, tol, [&](size_t i, const Result& r) {
    if (r.pass && quiet) return;
    s.io.out << (r.pass ? "PASS " : "FAIL ") << tests[i].name << (r.pass ? "" : ": " + r.reason) << "\n";
    s.io.out.flush();
  });
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::map<std::string, std::pair<int, int>> bySuite;
  int passed = 0;
  std::vector<std::string> regressions, newPasses;
  for (size_t i = 0; i < tests.size(); ++i) {
    auto& [p, a] = bySuite[tests[i].name.substr(0, tests[i].name.find('/'))];
    a++;
    p += results[i].pass;
    passed += results[i].pass;
    if (haveExpect && expected.count(tests[i].name) && !results[i].pass) regressions.push_back(tests[i].name + ": " + results[i].reason);
    if (haveExpect && !expected.count(tests[i].name) && results[i].pass) newPasses.push_back(tests[i].name);
  }
  s.io.out << "\nonnx-test on " << target << ": " << passed << " of " << tests.size() << " passed (" << num(std::round(secs * 10) / 10) << " s)";
  for (auto& [suite, pa] : bySuite) s.io.out << "; " << suite << " " << pa.first << "/" << pa.second;
  s.io.out << "\n";
  if (args->has("--results")) {
    std::ofstream out(args->get("--results"));
    for (size_t i = 0; i < tests.size(); ++i)
      out << tests[i].name << "\t" << (results[i].pass ? "PASS" : "FAIL") << "\t" << results[i].reason << "\t" << results[i].ops << "\n";
    if (!out) return s.fail("onnx-test: cannot write '" + args->get("--results") + "'");
  }
  if (args->has("--write-passes")) {
    std::ofstream out(args->get("--write-passes"));
    out << "# The ONNX backend tests expected to pass on " << target << " (ninja onnx-expect regenerates this list).\n";
    for (size_t i = 0; i < tests.size(); ++i)
      if (results[i].pass) out << tests[i].name << "\n";
    if (!out) return s.fail("onnx-test: cannot write '" + args->get("--write-passes") + "'");
  }
  if (haveExpect) {
    if (!newPasses.empty()) {
      s.io.out << newPasses.size() << " new pass" << (newPasses.size() == 1 ? "" : "es") << " (not in " << args->get("--expect") << "):\n";
      for (auto& n : newPasses) s.io.out << "  " << n << "\n";
    }
    if (!regressions.empty()) {
      s.io.out << regressions.size() << " test" << (regressions.size() == 1 ? "" : "s") << " expected to pass failed:\n";
      for (auto& n : regressions) s.io.out << "  " << n << "\n";
      return 1;
    }
    return 0;
  }
  return passed == int(tests.size()) ? 0 : 1;
}

#endif

}  // namespace eph::ephc
