//===- Einsum.cpp - ONNX Einsum as transposes, sums and batched matmuls ---===//
//
// torch.einsum exports as ONNX Einsum. Its operands contract left to right,
// two at a time: a label that neither the output nor a later operand needs
// is summed away (tcc.reduce_sum) where only one side has it, and
// contracted where both do; the two sides are transposed to [batch, own,
// contracted] and [batch, contracted, own], flattened to 3-D and multiplied
// (one batched tcc.matmul), and the product is reshaped back. A last
// transpose puts the labels in the output's order. So every einsum trains:
// its gradient is that of matmuls, transposes and sums.
//
// Supported: any number of float operands, explicit (`->`) or implicit
// output, `...` (the same dims wherever it appears). Refused as
// unsupported: a label repeated within one operand (a diagonal or trace),
// and a label whose sizes differ between operands (size-1 broadcasting).
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "tcc/TccOps.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

using namespace mlir;

namespace tcc::onnx_import {
namespace {

/// Labels are ints: a letter's char code, or kEllipsis + k for the k-th of
/// the ellipsis dims (right-aligned, so "...ij" of rank 4 has k = 0, 1).
constexpr int kEllipsis = 1000;

struct Term {
  std::vector<int> labels; ///< one per dim
  Value value;
};

class Einsum {
public:
  explicit Einsum(NodeImporter &n) : n(n) {}

  LogicalResult run();

private:
  NodeImporter &n;
  std::vector<Term> terms;
  std::vector<int> output;
  std::map<int, int64_t> size;

  LogicalResult parse(const std::string &equation);
  FailureOr<std::vector<int>> parseTerm(llvm::StringRef text, int rank,
                                        int ellipsisRank);
  int64_t product(const std::vector<int> &labels) {
    int64_t p = 1;
    for (int l : labels)
      p *= size[l];
    return p;
  }
  std::vector<int64_t> dims(const std::vector<int> &labels) {
    std::vector<int64_t> d;
    for (int l : labels)
      d.push_back(size[l]);
    return d;
  }
  FailureOr<Term> sumAway(Term t, const std::set<int> &keep);
  FailureOr<Term> permute(Term t, const std::vector<int> &order);
  FailureOr<Term> contract(Term a, Term b, const std::set<int> &keep);
};

FailureOr<std::vector<int>> Einsum::parseTerm(llvm::StringRef text, int rank,
                                              int ellipsisRank) {
  std::vector<int> labels;
  size_t dots = text.find("...");
  if (dots != llvm::StringRef::npos &&
      text.find("...", dots + 3) != llvm::StringRef::npos)
    return n.fail("the equation has '...' twice in one term");
  int letters = 0;
  for (char ch : text)
    letters += std::isalpha(static_cast<unsigned char>(ch)) ? 1 : 0;
  int ell = dots == llvm::StringRef::npos
                ? 0
                : (rank < 0 ? ellipsisRank : rank - letters);
  if (ell < 0)
    return n.fail("term '" + text.str() +
                  "' has more labels than its operand's " +
                  std::to_string(rank) + " dims");
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (i == dots) {
      for (int k = 0; k < ell; ++k)
        labels.push_back(kEllipsis + (ellipsisRank - ell) + k);
      i += 2;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(ch)))
      return n.fail("unexpected character '" + std::string(1, ch) +
                    "' in the equation");
    labels.push_back(ch);
  }
  if (rank >= 0 && int(labels.size()) != rank)
    return n.fail("term '" + text.str() + "' has " +
                  std::to_string(labels.size()) + " labels for an operand of " +
                  std::to_string(rank) + " dims");
  return labels;
}

LogicalResult Einsum::parse(const std::string &raw) {
  std::string eq;
  for (char ch : raw)
    if (!std::isspace(static_cast<unsigned char>(ch)))
      eq += ch;
  llvm::StringRef text(eq);
  auto [lhs, rhs] = text.split("->");
  bool explicitOutput = text.contains("->");
  llvm::SmallVector<llvm::StringRef> parts;
  lhs.split(parts, ',');
  if (int(parts.size()) != n.numInputs())
    return n.fail("the equation has " + std::to_string(parts.size()) +
                  " terms for " + std::to_string(n.numInputs()) + " inputs");
  // The widest ellipsis: operands' "..." dims align on the right.
  int ellipsisRank = 0;
  for (size_t i = 0; i < parts.size(); ++i)
    if (parts[i].contains("...")) {
      int letters = 0;
      for (char ch : parts[i])
        letters += std::isalpha(static_cast<unsigned char>(ch)) ? 1 : 0;
      ellipsisRank =
          std::max(ellipsisRank, int(n.inputType(int(i)).getRank()) - letters);
    }
  std::map<int, int> count;
  for (size_t i = 0; i < parts.size(); ++i) {
    RankedTensorType type = n.inputType(int(i));
    auto labels = parseTerm(parts[i], int(type.getRank()), ellipsisRank);
    if (failed(labels))
      return failure();
    std::set<int> seen;
    for (size_t d = 0; d < labels->size(); ++d) {
      int l = (*labels)[d];
      if (!seen.insert(l).second)
        return n.unsupported("label '" + std::string(1, char(l)) +
                             "' repeated within one operand (a diagonal)");
      int64_t s = type.getDimSize(int64_t(d));
      auto [it, fresh] = size.emplace(l, s);
      if (!fresh && it->second != s)
        return n.unsupported("a label of sizes " + std::to_string(it->second) +
                             " and " + std::to_string(s) +
                             " (einsum's size-1 broadcasting)");
      ++count[l];
    }
    terms.push_back({*labels, n.input(int(i))});
  }
  if (explicitOutput) {
    auto labels = parseTerm(rhs, -1, ellipsisRank);
    if (failed(labels))
      return failure();
    std::set<int> seen;
    for (int l : *labels) {
      if (!size.count(l))
        return n.fail("output label '" + std::string(1, char(l)) +
                      "' is in no input");
      if (!seen.insert(l).second)
        return n.fail("output label '" + std::string(1, char(l)) +
                      "' repeated");
    }
    output = *labels;
  } else {
    // Implicit: the ellipsis dims, then the labels used once, sorted.
    for (int k = 0; k < ellipsisRank; ++k)
      output.push_back(kEllipsis + k);
    for (auto [l, c] : count)
      if (l < kEllipsis && c == 1)
        output.push_back(l);
  }
  return success();
}

FailureOr<Term> Einsum::sumAway(Term t, const std::set<int> &keep) {
  llvm::SmallVector<int64_t> axes;
  std::vector<int> left;
  for (size_t d = 0; d < t.labels.size(); ++d) {
    if (keep.count(t.labels[d]))
      left.push_back(t.labels[d]);
    else
      axes.push_back(int64_t(d));
  }
  if (axes.empty())
    return t;
  auto sum = n.create<ReduceSumOp>(t.value, axes, false);
  if (failed(sum))
    return failure();
  return Term{left, *sum};
}

FailureOr<Term> Einsum::permute(Term t, const std::vector<int> &order) {
  if (order == t.labels)
    return t;
  llvm::SmallVector<int64_t> perm;
  for (int l : order)
    perm.push_back(std::find(t.labels.begin(), t.labels.end(), l) -
                   t.labels.begin());
  auto op = n.create<TransposeOp>(t.value, perm);
  if (failed(op))
    return failure();
  return Term{order, *op};
}

FailureOr<Term> Einsum::contract(Term a, Term b, const std::set<int> &keep) {
  auto in = [](const Term &t, int l) {
    return std::find(t.labels.begin(), t.labels.end(), l) != t.labels.end();
  };
  // A label only one side has and nothing later needs: summed away first.
  std::set<int> keepA = keep, keepB = keep;
  for (int l : a.labels)
    if (in(b, l))
      keepA.insert(l), keepB.insert(l);
  auto sa = sumAway(a, keepA);
  auto sb = sumAway(b, keepB);
  if (failed(sa) || failed(sb))
    return failure();
  a = *sa, b = *sb;
  std::vector<int> batch, summed, ownA, ownB;
  for (int l : a.labels) {
    if (in(b, l))
      (keep.count(l) ? batch : summed).push_back(l);
    else
      ownA.push_back(l);
  }
  for (int l : b.labels)
    if (!in(a, l))
      ownB.push_back(l);
  std::vector<int> orderA = batch, orderB = batch;
  orderA.insert(orderA.end(), ownA.begin(), ownA.end());
  orderA.insert(orderA.end(), summed.begin(), summed.end());
  orderB.insert(orderB.end(), summed.begin(), summed.end());
  orderB.insert(orderB.end(), ownB.begin(), ownB.end());
  auto pa = permute(a, orderA);
  auto pb = permute(b, orderB);
  if (failed(pa) || failed(pb))
    return failure();
  int64_t nb = product(batch), m = product(ownA), k = product(summed),
          nn = product(ownB);
  auto lhs = n.reshape(pa->value, {nb, m, k});
  auto rhs = n.reshape(pb->value, {nb, k, nn});
  if (failed(lhs) || failed(rhs))
    return failure();
  auto mm = n.create<MatmulOp>(*lhs, *rhs, false, false);
  if (failed(mm))
    return failure();
  std::vector<int> labels = batch;
  labels.insert(labels.end(), ownA.begin(), ownA.end());
  labels.insert(labels.end(), ownB.begin(), ownB.end());
  std::vector<int64_t> shape = dims(labels);
  auto out = n.reshape(*mm, shape);
  if (failed(out))
    return failure();
  return Term{labels, *out};
}

LogicalResult Einsum::run() {
  if (!n.attr("equation"))
    return n.fail("attribute 'equation' is required");
  for (int i = 0; i < n.numInputs(); ++i)
    if (!llvm::isa<FloatType>(n.inputElementType(i)))
      return n.unsupported("einsum of integer or bool tensors");
  if (failed(parse(n.attr("equation")->s())))
    return failure();
  std::set<int> out(output.begin(), output.end());
  // What operands i.. and the output need.
  auto neededFrom = [&](size_t i) {
    std::set<int> need = out;
    for (size_t j = i; j < terms.size(); ++j)
      need.insert(terms[j].labels.begin(), terms[j].labels.end());
    return need;
  };
  FailureOr<Term> acc = sumAway(terms[0], neededFrom(1));
  for (size_t i = 1; i < terms.size() && succeeded(acc); ++i)
    acc = contract(*acc, terms[i], neededFrom(i + 1));
  if (failed(acc))
    return failure();
  acc = sumAway(*acc, out);
  if (failed(acc))
    return failure();
  acc = permute(*acc, output);
  return failed(acc) ? failure() : n.setOutput(0, acc->value);
}

LogicalResult convertEinsum(NodeImporter &n) {
  if (failed(n.expectInputs(1, 64)) || failed(n.expectAttrs({"equation"})))
    return failure();
  return Einsum(n).run();
}

} // namespace

void registerEinsumConverter(ConverterTable &table) {
  table["Einsum"] = convertEinsum;
}

} // namespace tcc::onnx_import
