#include "frontends/value/Layout.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "frontends/value/Lower.h"

namespace eph::value {

uint32_t trainableSlots(const Group& grp) {
  return uint32_t(std::count(grp.trainable.begin(), grp.trainable.end(), 1));
}

namespace {

constexpr uint64_t kMaxIndex = std::numeric_limits<uint32_t>::max();

// Counting sort of (row, value) pairs, produced twice by `each` (once to count,
// once to fill) in the order the rows' entries should keep.
template <class Each>
CsrIndex bucket(size_t rows, const Each& each) {
  CsrIndex out;
  out.start.assign(rows + 1, 0);
  each([&](uint32_t row, uint32_t) { ++out.start[row + 1]; });
  std::partial_sum(out.start.begin(), out.start.end(), out.start.begin());
  out.index.resize(out.start.back());
  std::vector<uint32_t> next(out.start.begin(), out.start.end() - 1);
  each([&](uint32_t row, uint32_t v) { out.index[next[row]++] = v; });
  return out;
}

}  // namespace

bool derivativeLayout(const Graph& g, const std::vector<Group>& groups, bool withNormal, DerivativeLayout& out,
                      std::string& error) {
  out = DerivativeLayout{};
  uint32_t numConsts;
  std::vector<uint32_t> slot = leafSlots(g, out.numParams, numConsts);
  out.numResiduals = uint32_t(g.residuals().size());
  out.jacobianOffset = jacobianLayout(groups);
  if (out.jacobianOffset.back() > kMaxIndex) {
    error = "the Jacobian has " + std::to_string(out.jacobianOffset.back()) + " values, more than 32-bit indices reach";
    return false;
  }
  // Every Jacobian entry in layout order: (signature, instance, trainable slot).
  auto eachEntry = [&](const auto& f) {  // f(residual, column, position, instance's first position, t)
    for (size_t k = 0; k < groups.size(); ++k) {
      const Group& grp = groups[k];
      uint32_t t = trainableSlots(grp), pos = uint32_t(out.jacobianOffset[k]);
      for (size_t i = 0; i < grp.residuals.size(); ++i, pos += t)
        for (size_t s = 0, j = 0; s < grp.slots(); ++s)
          if (grp.trainable[s]) f(grp.residuals[i], slot[grp.leaves[i * grp.slots() + s]], uint32_t(pos + j++), pos, t);
    }
  };

  // The Jacobian's rows, columns sorted; the transposed lists per parameter.
  CsrIndex rows = bucket(out.numResiduals, [&](const auto& put) {
    eachEntry([&](uint32_t r, uint32_t, uint32_t pos, uint32_t, uint32_t) { put(r, pos); });
  });
  out.jacobianRows = rows;
  out.jacobianValue = rows.index;
  std::vector<uint32_t> colOf(out.jacobianOffset.back());
  eachEntry([&](uint32_t, uint32_t c, uint32_t pos, uint32_t, uint32_t) { colOf[pos] = c; });
  for (size_t r = 0; r < rows.rows(); ++r) {
    auto first = out.jacobianValue.begin() + rows.start[r], last = out.jacobianValue.begin() + rows.start[r + 1];
    std::sort(first, last, [&](uint32_t a, uint32_t b) { return colOf[a] < colOf[b]; });
    for (auto it = first; it != last; ++it) out.jacobianRows.index[it - out.jacobianValue.begin()] = colOf[*it];
  }
  out.gradientSources = bucket(out.numParams, [&](const auto& put) {
    eachEntry([&](uint32_t, uint32_t c, uint32_t pos, uint32_t, uint32_t) { put(c, pos); });
  });
  if (!withNormal) return true;

  // JᵀJ's pattern: per parameter row, the columns its residuals read with it.
  std::vector<std::vector<uint32_t>> cols(out.numParams);
  const std::vector<uint32_t>& col = out.jacobianRows.index;
  for (size_t r = 0; r < rows.rows(); ++r)
    for (uint32_t a = rows.start[r]; a < rows.start[r + 1]; ++a)
      for (uint32_t b = rows.start[r]; b < rows.start[r + 1]; ++b) cols[col[a]].push_back(col[b]);
  out.normal.start.assign(out.numParams + 1, 0);
  for (uint32_t p = 0; p < out.numParams; ++p) {
    std::sort(cols[p].begin(), cols[p].end());
    cols[p].erase(std::unique(cols[p].begin(), cols[p].end()), cols[p].end());
    out.normal.start[p + 1] = out.normal.start[p] + uint32_t(cols[p].size());
    out.normal.index.insert(out.normal.index.end(), cols[p].begin(), cols[p].end());
    if (out.normal.index.size() > kMaxIndex) {
      error = "JᵀJ has more entries than 32-bit indices reach";
      return false;
    }
    std::vector<uint32_t>().swap(cols[p]);
  }
  auto entry = [&](uint32_t a, uint32_t b) {
    auto first = out.normal.index.begin() + out.normal.start[a], last = out.normal.index.begin() + out.normal.start[a + 1];
    return uint32_t(std::lower_bound(first, last, b) - out.normal.index.begin());
  };

  // Pair contributions: offsets, the atomic kernels' tables, the transposed lists.
  out.pairOffset = {0};
  for (const Group& grp : groups) {
    uint64_t t = trainableSlots(grp), n = grp.residuals.size();
    out.pairOffset.push_back(out.pairOffset.back() + n * t * (t + 1) / 2);
    if (n * t * t > kMaxIndex || 2 * out.pairOffset.back() > kMaxIndex) {
      error = "JᵀJ has more contributions than 32-bit indices reach";
      return false;
    }
  }
  std::vector<uint32_t> instCols;
  auto eachPair = [&](const auto& f) {  // f(signature, instance, a, b, entry (a, b), scratch position)
    for (size_t k = 0; k < groups.size(); ++k) {
      const Group& grp = groups[k];
      uint32_t t = trainableSlots(grp), q = uint32_t(out.pairOffset[k]);
      for (size_t i = 0; i < grp.residuals.size(); ++i) {
        instCols.clear();
        for (size_t s = 0; s < grp.slots(); ++s)
          if (grp.trainable[s]) instCols.push_back(slot[grp.leaves[i * grp.slots() + s]]);
        for (uint32_t a = 0; a < t; ++a)
          for (uint32_t b = a; b < t; ++b, ++q)
            f(k, i, a, b, entry(instCols[a], instCols[b]), entry(instCols[b], instCols[a]), q);
      }
    }
  };
  out.pairTable.resize(groups.size());
  for (size_t k = 0; k < groups.size(); ++k) {
    uint32_t t = trainableSlots(groups[k]);
    out.pairTable[k].resize(groups[k].residuals.size() * t * t);
  }
  eachPair([&](size_t k, size_t i, uint32_t a, uint32_t b, uint32_t ab, uint32_t ba, uint32_t) {
    uint32_t t = trainableSlots(groups[k]);
    out.pairTable[k][i * t * t + a * t + b] = ab;
    out.pairTable[k][i * t * t + b * t + a] = ba;
  });
  out.normalSources = bucket(out.normal.index.size(), [&](const auto& put) {
    eachPair([&](size_t, size_t, uint32_t a, uint32_t b, uint32_t ab, uint32_t ba, uint32_t q) {
      put(ab, q);
      if (a != b) put(ba, q);
    });
  });
  return true;
}

}  // namespace eph::value
