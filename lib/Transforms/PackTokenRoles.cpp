// The roles of tcc ops over packed token rows (PackTokenRoles.h).
#include "PackTokenRoles.h"

#include "tcc/TccOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace tcc::packing {
namespace {

bool isFloat(Value v) {
  return llvm::isa<FloatType>(tensorTypeOf(v).getElementType());
}

using Zero = std::function<bool(unsigned)>;

/// Every result zero at padding when operand `i` is.
std::function<bool(unsigned, const Zero &)> follows(unsigned i) {
  return [i](unsigned, const Zero &zero) { return zero(i); };
}
std::function<bool(unsigned, const Zero &)> never() {
  return [](unsigned, const Zero &) { return false; };
}

/// An elementwise op on token rows: the operands of the result's rank with
/// token rows are packed; the others must broadcast along the rows.
std::optional<Role> elementwise(Operation *op, const Geometry &g) {
  if (op->getNumResults() != 1)
    return std::nullopt;
  auto result = tensorTypeOf(op->getResult(0));
  unsigned lead = rowDims(result, g);
  if (lead == 0)
    return std::nullopt;
  Role role;
  role.results.push_back({0, Form::Row});
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    auto t = tensorTypeOf(v);
    if (t.getRank() == result.getRank() && rowDims(t, g) == lead &&
        t.getShape().take_front(lead) == result.getShape().take_front(lead)) {
      role.operands.push_back({unsigned(i), Form::Row});
      continue;
    }
    // Right-aligned: the dims over the result's rows must be 1 or absent.
    int64_t offset = result.getRank() - t.getRank();
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d + offset < int64_t(lead) && t.getDimSize(d) != 1)
        return std::nullopt;
  }
  // Which ops keep zero rows zero (f(0, ...) == 0 on the rows that are).
  auto packed = [ops = role.operands](unsigned i) {
    return llvm::any_of(ops, [&](auto p) { return p.first == i; });
  };
  unsigned n = op->getNumOperands();
  if (llvm::isa<MulOp, AndOp>(op))
    role.zeroPadded = [packed](unsigned, const Zero &zero) {
      return (packed(0) && zero(0)) || (packed(1) && zero(1));
    };
  else if (llvm::isa<DivOp>(op))
    role.zeroPadded = [packed](unsigned, const Zero &zero) {
      return packed(0) && zero(0);
    };
  else if (llvm::isa<AddOp, SubOp>(op))
    role.zeroPadded = [packed, n](unsigned, const Zero &zero) {
      for (unsigned i = 0; i < n; ++i)
        if (!packed(i) || !zero(i))
          return false;
      return true;
    };
  else if (llvm::isa<NegOp, CastOp, ReluOp, GeluOp, TanhOp, SinOp, AbsOp,
                     ErfOp, SqrtOp, BroadcastOp>(op))
    role.zeroPadded = [packed](unsigned, const Zero &zero) {
      return packed(0) && zero(0);
    };
  else if (llvm::isa<GeluGradOp>(op))
    role.zeroPadded = [packed](unsigned, const Zero &zero) {
      return packed(1) && zero(1);
    };
  else if (llvm::isa<WhereOp>(op))
    role.zeroPadded = [packed](unsigned, const Zero &zero) {
      return packed(1) && zero(1) && packed(2) && zero(2);
    };
  else
    role.zeroPadded = never();
  // x != c for an integer x in token rows: false at padding once x is
  // packed with c there (eval_step's count of the labels not ignored).
  auto cmp = llvm::dyn_cast<CmpOp>(op);
  DenseIntElementsAttr c;
  if (cmp && cmp.getPredicate() == CmpPredicate::ne && packed(0) &&
      llvm::isa<IntegerType>(tensorTypeOf(cmp.getLhs()).getElementType()) &&
      matchPattern(cmp.getRhs(), m_Constant(&c)) && c.isSplat())
    role.fill = Role::Fill{0, c.getSplatValue<APInt>().getSExtValue(),
                           /*check=*/false, /*zeroResult=*/true};
  return role;
}

bool isPackedAttention(Operation *op, const Geometry &g) {
  if (auto a = llvm::dyn_cast<AttentionOp>(op))
    return a.getKeyMask() == g.keyMask;
  if (auto a = llvm::dyn_cast<AttentionGradOp>(op))
    return a.getKeyMask() == g.keyMask;
  return false;
}

/// A [0, 2, 1, 3] transpose between token rows [B, T, H, D] and the
/// attention layout [B, H, T, D].
std::optional<Role> transpose(TransposeOp op, const Geometry &g) {
  if (op.getPerm() != ArrayRef<int64_t>{0, 2, 1, 3})
    return std::nullopt;
  auto in = tensorTypeOf(op.getInput()), out = tensorTypeOf(op.getResult());
  Role role;
  role.zeroPadded = follows(0);
  Operation *def = op.getInput().getDefiningOp();
  if (def && isPackedAttention(def, g) && rowDims(out, g) == 2) {
    role.operands.push_back({0, Form::Head});
    role.results.push_back({0, Form::Row});
    return role;
  }
  bool intoAttention =
      !op->use_empty() && llvm::all_of(op->getUses(), [&](OpOperand &use) {
        return isPackedAttention(use.getOwner(), g) &&
               use.getOperandNumber() < 4;
      });
  if (intoAttention && rowDims(in, g) == 2 && out.getDimSize(2) == g.t) {
    role.operands.push_back({0, Form::Row});
    role.results.push_back({0, Form::Head});
    return role;
  }
  return std::nullopt;
}

std::optional<Role> attention(Operation *op, const Geometry &g,
                              unsigned headOperands) {
  auto q = tensorTypeOf(op->getOperand(0)), k = tensorTypeOf(op->getOperand(1));
  if (!isPackedAttention(op, g) || q.getDimSize(0) != g.b ||
      q.getDimSize(2) != g.t || k.getDimSize(2) != g.t)
    return std::nullopt;
  Role role;
  for (unsigned i = 0; i < headOperands; ++i)
    role.operands.push_back({i, Form::Head});
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    role.results.push_back({i, Form::Head});
  // The gradients are zero at padding when the result's gradient is: a
  // padded key gets probability 0, a padded query no gradient.
  role.zeroPadded = llvm::isa<AttentionGradOp>(op) ? follows(3) : never();
  return role;
}

std::optional<Role> matmul(MatmulOp op, const Geometry &g) {
  auto lhs = tensorTypeOf(op.getLhs()), rhs = tensorTypeOf(op.getRhs());
  Role role;
  role.runsOverRows = true;
  if (!op.getTransposeLhs()) {
    // Token rows times a weight.
    unsigned lead = rowDims(lhs, g);
    if (rhs.getRank() != 2 || lead == 0 ||
        int64_t(lead) != lhs.getRank() - 1 || rowDims(op.getType(), g) != lead)
      return std::nullopt;
    role.operands.push_back({0, Form::Row});
    role.results.push_back({0, Form::Row});
    role.zeroPadded = follows(0);
    return role;
  }
  // A weight gradient: tokens^T tokens, per batch ([B, T, F]^T [B, T, C])
  // or over all rows ([N, F]^T [N, C]).
  if (op.getTransposeRhs() || lhs.getRank() != rhs.getRank() ||
      rowDims(lhs, g) != unsigned(lhs.getRank() - 1) ||
      rowDims(rhs, g) != unsigned(rhs.getRank() - 1))
    return std::nullopt;
  role.operands = {{0, Form::Row}, {1, Form::Row}};
  role.needsZeroPadded = {0, 1};
  role.usersSumOverBatch = lhs.getRank() == 3;
  role.zeroPadded = never();
  return role;
}

std::optional<Role> gemm(GemmOp op, const Geometry &g) {
  auto a = tensorTypeOf(op.getA()), b = tensorTypeOf(op.getB());
  Role role;
  role.runsOverRows = true;
  if (Value c = op.getC())
    if (tensorTypeOf(c).getRank() == 2 && tensorTypeOf(c).getDimSize(0) != 1)
      return std::nullopt; // a C per row
  if (!op.getTransposeA()) {
    if (rowDims(a, g) != 1)
      return std::nullopt;
    role.operands.push_back({0, Form::Row});
    role.results.push_back({0, Form::Row});
    bool bias = (op.getC() && op.getBeta().convertToDouble() != 0) ||
                op.getBias();
    role.zeroPadded = [bias](unsigned, const Zero &zero) {
      return !bias && zero(0);
    };
    return role;
  }
  if (op.getTransposeB() || rowDims(a, g) != 1 || rowDims(b, g) != 1 ||
      op.getC() || op.getBias())
    return std::nullopt;
  role.operands = {{0, Form::Row}, {1, Form::Row}};
  role.needsZeroPadded = {0, 1};
  role.zeroPadded = never();
  return role;
}

/// A row op over the last dims (from `axis`) of its token-row operands.
std::optional<Role> rowOp(Operation *op, const Geometry &g, int64_t axis,
                          ArrayRef<unsigned> rowOperands,
                          ArrayRef<unsigned> rowResults) {
  unsigned lead = rowDims(op->getOperand(rowOperands[0]).getType(), g);
  if (lead == 0 || axis < int64_t(lead))
    return std::nullopt;
  Role role;
  role.runsOverRows = true;
  for (unsigned i : rowOperands) {
    if (rowDims(op->getOperand(i).getType(), g) != lead)
      return std::nullopt;
    role.operands.push_back({i, Form::Row});
  }
  for (unsigned i : rowResults)
    role.results.push_back({i, Form::Row});
  role.zeroPadded = never();
  return role;
}

std::optional<Role> reduce(Operation *op, ArrayRef<int64_t> axes,
                           const Geometry &g) {
  unsigned lead = rowDims(op->getOperand(0).getType(), g);
  if (lead == 0 || !isFloat(op->getOperand(0)))
    return std::nullopt;
  Role role;
  role.operands.push_back({0, Form::Row});
  if (llvm::all_of(axes, [&](int64_t a) { return a >= int64_t(lead); })) {
    // Within each row.
    role.results.push_back({0, Form::Row});
    role.zeroPadded = follows(0);
    return role;
  }
  // A sum over every token (a bias gradient): exact only when the padded
  // rows are zero.
  for (unsigned d = 0; d < lead; ++d)
    if (!llvm::is_contained(axes, int64_t(d)))
      return std::nullopt;
  if (!llvm::isa<ReduceSumOp>(op))
    return std::nullopt;
  role.needsZeroPadded = {0};
  role.zeroPadded = never();
  return role;
}

/// cross_entropy (the sums: a sink) or its gradient (the logits' gradient,
/// zero at padding since a padded token's label is ignore_index, which the
/// packed labels' check enforces).
std::optional<Role> crossEntropy(Value logits, Value labels,
                                 int64_t ignoreIndex, bool grad,
                                 const Geometry &g) {
  auto type = tensorTypeOf(logits);
  unsigned lead = rowDims(type, g);
  if (lead == 0 || type.getRank() != lead + 1 ||
      rowDims(labels.getType(), g) != lead)
    return std::nullopt;
  Role role;
  role.runsOverRows = true;
  role.operands = {{0, Form::Row}, {1, Form::Row}};
  if (grad)
    role.results.push_back({0, Form::Row});
  role.fill = Role::Fill{1, ignoreIndex, /*check=*/true, /*zeroResult=*/false};
  role.zeroPadded = [grad](unsigned, const Zero &) { return grad; };
  return role;
}

} // namespace

unsigned rowDims(Type type, const Geometry &g) {
  auto t = llvm::dyn_cast<RankedTensorType>(type);
  if (!t || t.getRank() == 0)
    return 0;
  ArrayRef<int64_t> s = t.getShape();
  if (s.size() >= 2 && s[0] == g.b && s[1] == g.t)
    return 2;
  return s[0] == g.n() ? 1 : 0;
}

std::optional<Role> roleOf(Operation *op, const Geometry &g) {
  if (op->hasTrait<OpClass::Elementwise>())
    return elementwise(op, g);
  return llvm::TypeSwitch<Operation *, std::optional<Role>>(op)
      .Case([&](ReshapeOp r) -> std::optional<Role> {
        // Not integers: a loss's labels must reach it as they enter, to be
        // packed with ignore_index at padding.
        if (!isFloat(r.getInput()) || !rowDims(r.getInput().getType(), g) ||
            !rowDims(r.getType(), g))
          return std::nullopt;
        Role role;
        role.operands.push_back({0, Form::Row});
        role.results.push_back({0, Form::Row});
        role.zeroPadded = follows(0);
        return role;
      })
      .Case([&](TransposeOp t) { return transpose(t, g); })
      .Case([&](SplitOp s) -> std::optional<Role> {
        // Along the features (a fused q/k/v projection's output).
        unsigned lead = rowDims(s.getInput().getType(), g);
        if (lead == 0 || s.getAxis() < int64_t(lead))
          return std::nullopt;
        Role role;
        role.operands.push_back({0, Form::Row});
        for (unsigned i = 0; i < s.getNumResults(); ++i)
          role.results.push_back({i, Form::Row});
        role.zeroPadded = follows(0);
        return role;
      })
      .Case([&](ConcatOp c) -> std::optional<Role> {
        // Along the features (its gradient: q, k and v's joined).
        unsigned lead = rowDims(c.getType(), g);
        if (lead == 0 || c.getAxis() < int64_t(lead))
          return std::nullopt;
        Role role;
        for (auto [i, v] : llvm::enumerate(c.getInputs())) {
          if (rowDims(v.getType(), g) != lead)
            return std::nullopt;
          role.operands.push_back({unsigned(i), Form::Row});
        }
        role.results.push_back({0, Form::Row});
        unsigned n = c.getInputs().size();
        role.zeroPadded = [n](unsigned, const Zero &zero) {
          for (unsigned i = 0; i < n; ++i)
            if (!zero(i))
              return false;
          return true;
        };
        return role;
      })
      .Case([&](AttentionOp) { return attention(op, g, 3); })
      .Case([&](AttentionGradOp) { return attention(op, g, 4); })
      .Case([&](MatmulOp m) { return matmul(m, g); })
      .Case([&](GemmOp m) { return gemm(m, g); })
      .Case([&](LayerNormOp ln) { return rowOp(op, g, ln.getAxis(), {0}, {0}); })
      .Case([&](LayerNormGradOp ln) -> std::optional<Role> {
        unsigned grad = ln.getScale() ? 2 : 1;
        SmallVector<unsigned> rows = {0, grad};
        if (ln.getResidualGrad())
          rows.push_back(grad + 1);
        auto role = rowOp(op, g, ln.getAxis(), rows, {0});
        if (role) {
          // scale_grad, bias_grad and input_grad_sum sum over the tokens.
          role->needsZeroPadded.assign(rows.begin() + 1, rows.end());
          role->zeroPadded = [rows](unsigned r, const Zero &zero) {
            return r == 0 && llvm::all_of(ArrayRef(rows).drop_front(),
                                          [&](unsigned i) { return zero(i); });
          };
        }
        return role;
      })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](auto s) {
        return rowOp(op, g, s.getAxis(), {0}, {0});
      })
      .Case<SoftmaxGradOp, LogSoftmaxGradOp>([&](auto s) {
        auto role = rowOp(op, g, s.getAxis(), {0, 1}, {0});
        if (role)
          role->zeroPadded = follows(1);
        return role;
      })
      .Case([&](CrossEntropyOp ce) {
        return crossEntropy(ce.getLogits(), ce.getLabels(),
                            ce.getIgnoreIndex(), false, g);
      })
      .Case([&](CrossEntropyGradOp ce) {
        return crossEntropy(ce.getLogits(), ce.getLabels(),
                            ce.getIgnoreIndex(), true, g);
      })
      .Case([&](DropoutOp d) -> std::optional<Role> {
        // The unpacked dropout's mask, drawn by the tokens' unpacked
        // positions (tcc.dropout's rows).
        if (!rowDims(d.getInput().getType(), g) || d.getRows())
          return std::nullopt;
        Role role;
        role.operands.push_back({0, Form::Row});
        role.results = {{0, Form::Row}, {1, Form::Row}};
        role.zeroPadded = [](unsigned r, const Zero &zero) {
          return r == 0 && zero(0);
        };
        return role;
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp>(
          [&](auto r) { return reduce(op, r.getAxes(), g); })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace tcc::packing
