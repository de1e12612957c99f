// tcc-pack-tokens: pad-skipping. Finds the region of a function that can
// run over packed token rows (the roles of PackTokenRoles.h), shrinks it
// until every value that leaves it is zero at padded positions, and
// rewrites it: tcc.pack_index at the top, tcc.pack at the entries,
// tcc.unpack at the exits, attention over cu_seqlens, and the library calls
// marked to run over the valid rows. Shapes never change.
#include "PackTokenRoles.h"

#include "tcc/Transforms/Passes.h"

#include "tcc/TccOps.h"

#include "plan/plan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace tcc {
#define GEN_PASS_DEF_PACKTOKENS
#include "tcc/Transforms/Passes.h.inc"
} // namespace tcc

using namespace mlir;
using namespace tcc;
using namespace tcc::packing;

namespace {

/// The one key mask [B, T] of the function's attention ops, or why none.
std::optional<Geometry> findMask(func::FuncOp func, std::string &why) {
  llvm::SetVector<Value> masks;
  func.walk([&](Operation *op) {
    Value mask;
    if (auto a = llvm::dyn_cast<AttentionOp>(op))
      mask = a.getKeyMask();
    else if (auto a = llvm::dyn_cast<AttentionGradOp>(op))
      mask = a.getKeyMask();
    if (mask)
      masks.insert(mask);
  });
  if (masks.empty()) {
    why = "no attention with a key-padding mask";
    return std::nullopt;
  }
  if (masks.size() > 1) {
    why = std::to_string(masks.size()) +
          " different attention key masks (one is packed per function)";
    return std::nullopt;
  }
  auto type = tensorTypeOf(masks[0]);
  Type e = type.getElementType();
  if (e.isInteger(32)) {
    why = "the attention runs over packed documents (tcc-pack-documents)";
    return std::nullopt;
  }
  if (type.getRank() != 2 || !(e.isInteger(1) || llvm::isa<FloatType>(e)) ||
      type.getDimSize(1) < 2) {
    why = "the key mask is not [batch, seq] of bools or biases";
    return std::nullopt;
  }
  return Geometry{masks[0], type.getDimSize(0), type.getDimSize(1)};
}

/// The ops computing `mask`, when they read only arguments, constants and
/// parameters and have no effects: they are cloned to the top of the
/// function, so pack_index runs before any token-wise op.
bool maskSlice(Value mask, SmallVectorImpl<Operation *> &slice) {
  llvm::SetVector<Operation *> seen;
  SmallVector<Value> work{mask};
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || seen.contains(def))
      continue;
    if (def->getNumRegions() || !isMemoryEffectFree(def))
      return false;
    seen.insert(def);
    llvm::append_range(work, def->getOperands());
  }
  slice.assign(seen.begin(), seen.end());
  llvm::sort(slice, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  return true;
}

/// Positions [begin, end) of the sequence dim that `use` reads of a
/// [B, T, ...] value: a gather along dim 1 with constant indices (BERT's
/// CLS token), or a slice of dim 1 alone.
std::optional<std::pair<int64_t, int64_t>> readRange(OpOperand &use,
                                                     const Geometry &g) {
  if (rowDims(use.get().getType(), g) != 2 || use.getOperandNumber() != 0)
    return std::nullopt;
  if (auto gather = llvm::dyn_cast<GatherOp>(use.getOwner())) {
    DenseIntElementsAttr indices;
    if (gather.getAxis() != 1 ||
        !matchPattern(gather.getIndices(), m_Constant(&indices)) ||
        indices.empty())
      return std::nullopt;
    int64_t lo = g.t, hi = -1;
    for (APInt i : indices.getValues<APInt>()) {
      int64_t t = i.getSExtValue() < 0 ? i.getSExtValue() + g.t
                                       : i.getSExtValue();
      if (t < 0 || t >= g.t)
        return std::nullopt;
      lo = std::min(lo, t), hi = std::max(hi, t);
    }
    return std::make_pair(lo, hi + 1);
  }
  if (auto slice = llvm::dyn_cast<SliceOp>(use.getOwner())) {
    ArrayRef<int64_t> shape = tensorTypeOf(use.get()).getShape();
    for (size_t d = 0; d < shape.size(); ++d) {
      bool whole = slice.getStarts()[d] == 0 &&
                   slice.getLimits()[d] == shape[d] &&
                   slice.getStrides()[d] == 1;
      if (d != 1 && !whole)
        return std::nullopt;
    }
    if (slice.getStrides()[1] != 1 ||
        slice.getStarts()[1] >= slice.getLimits()[1])
      return std::nullopt;
    return std::make_pair(slice.getStarts()[1], slice.getLimits()[1]);
  }
  return std::nullopt;
}

/// A [B, T, ...] gradient that is zero but at the positions a gather or
/// slice along dim 1 read (the CLS token's): packed with a run-time check
/// that it is zero at every padded position.
bool zeroOutsideReads(Value v, const Geometry &g) {
  if (rowDims(v.getType(), g) != 2)
    return false;
  if (auto grad = v.getDefiningOp<GatherGradOp>())
    return grad.getAxis() == 1;
  if (auto grad = v.getDefiningOp<SliceGradOp>()) {
    ArrayRef<int64_t> shape = tensorTypeOf(v).getShape();
    for (size_t d = 0; d < shape.size(); ++d)
      if (d != 1 && (grad.getStarts()[d] != 0 ||
                     grad.getLimits()[d] != shape[d] ||
                     grad.getStrides()[d] != 1))
        return false;
    return true;
  }
  return false;
}

class Region {
public:
  Region(func::FuncOp func, const Geometry &g, ArrayRef<Operation *> slice)
      : func(func), g(g), slice(slice) {}

  /// The connected region around the masked attention ops, shrunk until
  /// its exits are exact. False when no attention stays in it.
  bool grow();
  void rewrite();
  std::string summary() const;
  unsigned size() const { return ops.size(); }

private:
  std::optional<Form> packedResult(Value v) const;
  std::optional<Form> packedOperand(OpOperand &use) const;
  bool internal(OpOperand &use) const;
  bool isExit(OpOperand &use) const;
  bool zeroEntry(OpOperand &use) const;
  bool zeroAt(OpOperand &use) const;
  bool holds(Operation *op);
  void computeZeroPadded();

  func::FuncOp func;
  Geometry g;
  SmallVector<Operation *> slice; // what computes the mask (maskSlice)
  llvm::MapVector<Operation *, Role> roles; // every candidate op
  llvm::SetVector<Operation *> ops;         // the region
  DenseSet<Value> zeroPadded;
  unsigned packs = 0, unpacks = 0;
};

std::optional<Form> Region::packedResult(Value v) const {
  Operation *def = v.getDefiningOp();
  if (!def || !ops.contains(def))
    return std::nullopt;
  unsigned index = llvm::cast<OpResult>(v).getResultNumber();
  for (auto [i, form] : roles.lookup(def).results)
    if (i == index)
      return form;
  return std::nullopt;
}

std::optional<Form> Region::packedOperand(OpOperand &use) const {
  auto it = roles.find(use.getOwner());
  if (it == roles.end())
    return std::nullopt;
  for (auto [i, form] : it->second.operands)
    if (i == use.getOperandNumber())
      return form;
  return std::nullopt;
}

/// Both ends in the region, in packed order of the same form.
bool Region::internal(OpOperand &use) const {
  if (!ops.contains(use.getOwner()))
    return false;
  std::optional<Form> r = packedResult(use.get()), o = packedOperand(use);
  return r && o && *r == *o;
}

/// A packed result read where packed order is not expected.
bool Region::isExit(OpOperand &use) const {
  return packedResult(use.get()) && !internal(use);
}

/// A packed operand that enters the region zero at padding (checked).
bool Region::zeroEntry(OpOperand &use) const {
  std::optional<Form> form = packedOperand(use);
  return ops.contains(use.getOwner()) && form == Form::Row &&
         !internal(use) && zeroOutsideReads(use.get(), g);
}

/// Whether operand `use` of a region op is zero at every padded row.
bool Region::zeroAt(OpOperand &use) const {
  return (internal(use) && zeroPadded.contains(use.get())) || zeroEntry(use);
}

void Region::computeZeroPadded() {
  zeroPadded.clear();
  for (Operation &op : func.getBody().front()) {
    if (!ops.contains(&op))
      continue;
    const Role &role = roles[&op];
    auto zero = [&](unsigned i) { return zeroAt(op.getOpOperand(i)); };
    // An operand entering packed with its fill value.
    bool filled = role.fill && role.fill->zeroResult &&
                  !internal(op.getOpOperand(role.fill->operand));
    for (auto [i, form] : role.results)
      if (filled || role.zeroPadded(i, zero))
        zeroPadded.insert(op.getResult(i));
  }
}

/// Whether `op` can stay: its sums see zero padding, what leaves it is
/// zero at padding, and what enters it can be packed.
bool Region::holds(Operation *op) {
  const Role &role = roles[op];
  if (!role.needsZeroPadded.empty() &&
      llvm::none_of(role.needsZeroPadded, [&](unsigned i) {
        return zeroAt(op->getOpOperand(i));
      }))
    return false;
  if (role.usersSumOverBatch)
    for (Operation *user : op->getUsers()) {
      auto sum = llvm::dyn_cast<ReduceSumOp>(user);
      if (!sum || !llvm::is_contained(sum.getAxes(), int64_t(0)))
        return false;
    }
  for (auto [i, form] : role.results)
    for (OpOperand &use : op->getResult(i).getUses())
      if (isExit(use) &&
          (form != Form::Row ||
           (!zeroPadded.contains(use.get()) && !readRange(use, g))))
        return false;
  for (auto [i, form] : role.operands)
    if (form == Form::Head && !internal(op->getOpOperand(i)))
      return false; // only a transpose in the region makes the head layout
  return true;
}

bool Region::grow() {
  for (Operation &op : func.getBody().front())
    if (std::optional<Role> role = roleOf(&op, g))
      roles.insert({&op, std::move(*role)});
  // Connected through packed values, from the attention ops.
  SmallVector<Operation *> work;
  for (auto &[op, role] : roles)
    if (llvm::isa<AttentionOp, AttentionGradOp>(op))
      work.push_back(op);
  auto connected = [&](OpOperand &use) {
    Operation *def = use.get().getDefiningOp();
    if (!def || !roles.count(def) || !roles.count(use.getOwner()))
      return false;
    unsigned index = llvm::cast<OpResult>(use.get()).getResultNumber();
    std::optional<Form> o = packedOperand(use);
    return o && llvm::any_of(roles[def].results, [&](auto r) {
             return r.first == index && r.second == *o;
           });
  };
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!ops.insert(op))
      continue;
    for (OpOperand &use : op->getOpOperands())
      if (connected(use))
        work.push_back(use.get().getDefiningOp());
    for (Value r : op->getResults())
      for (OpOperand &use : r.getUses())
        if (connected(use))
          work.push_back(use.getOwner());
  }
  // Shrink to a fixpoint: an op that does not hold leaves, which can make
  // its neighbours' values exits.
  for (bool changed = true; changed;) {
    changed = false;
    computeZeroPadded();
    for (Operation *op : SmallVector<Operation *>(ops.begin(), ops.end()))
      if (!holds(op)) {
        ops.remove(op);
        changed = true;
      }
  }
  return llvm::any_of(ops, [](Operation *op) {
    return llvm::isa<AttentionOp, AttentionGradOp>(op);
  });
}

void Region::rewrite() {
  Block &body = func.getBody().front();
  OpBuilder b(func.getContext());
  // The mask's computation, then pack_index, at the top.
  b.setInsertionPointToStart(&body);
  IRMapping map;
  for (Operation *op : slice)
    b.clone(*op, map);
  Value mask = map.lookupOrDefault(g.keyMask);
  auto index = PackIndexOp::create(b, g.keyMask.getLoc(), mask);
  Value rows = index.getRows(), cu = index.getCuSeqlens();
  Operation *top = index;

  // Entries: one pack per value and fill, checked when any use needs the
  // check (the check holds for every use or the step stops).
  struct Entry {
    OpOperand *use;
    int64_t fill;
    bool check;
  };
  SmallVector<Entry> entries;
  DenseSet<std::pair<Value, int64_t>> checked;
  for (Operation *op : ops) {
    const Role &role = roles[op];
    for (auto [i, form] : role.operands) {
      OpOperand &use = op->getOpOperand(i);
      if (internal(use))
        continue;
      Entry e{&use, 0, zeroEntry(use)};
      if (role.fill && role.fill->operand == i)
        e = {&use, role.fill->value, role.fill->check};
      entries.push_back(e);
      if (e.check)
        checked.insert({use.get(), e.fill});
    }
  }
  DenseMap<std::pair<Value, int64_t>, Value> packed;
  for (Entry &e : entries) {
    Value v = e.use->get();
    Value &p = packed[{v, e.fill}];
    if (!p) {
      Operation *def = v.getDefiningOp();
      if (def && top->isBeforeInBlock(def))
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointAfter(top);
      p = PackOp::create(b, v.getLoc(), v, rows, APFloat(double(e.fill)),
                         checked.contains({v, e.fill}));
      ++packs;
    }
    e.use->set(p);
  }
  // Exits: one unpack per value, for every use outside packed order.
  for (Operation *op : ops)
    for (auto [i, form] : roles[op].results) {
      Value v = op->getResult(i);
      SmallVector<OpOperand *> exits;
      for (OpOperand &use : v.getUses())
        if (isExit(use))
          exits.push_back(&use);
      if (exits.empty())
        continue;
      // Exact everywhere when zero at padding; else only where it is read,
      // and those positions are checked to be tokens.
      int64_t begin = 0, end = 0;
      if (!zeroPadded.contains(v)) {
        begin = g.t;
        for (OpOperand *use : exits) {
          auto [lo, hi] = *readRange(*use, g);
          begin = std::min(begin, lo), end = std::max(end, hi);
        }
      }
      b.setInsertionPointAfter(op);
      Value u = UnpackOp::create(b, v.getLoc(), v, rows, end ? g.t : 0,
                                 end ? begin : 0, end);
      ++unpacks;
      for (OpOperand *use : exits)
        use->set(u);
    }
  // Attention over the packed sequences; calls over the valid rows.
  auto capacity = b.getI64IntegerAttr(g.n());
  for (Operation *op : ops) {
    if (auto d = llvm::dyn_cast<DropoutOp>(op))
      d.getRowsMutable().assign(rows);
    if (auto a = llvm::dyn_cast<AttentionOp>(op))
      a.getKeyMaskMutable().assign(cu);
    else if (auto a = llvm::dyn_cast<AttentionGradOp>(op))
      a.getKeyMaskMutable().assign(cu);
    // Library calls run over the valid rows; so does a generated kernel
    // whose result is in packed row order (its root op carries the mark).
    bool rowResult = llvm::any_of(roles[op].results, [&](auto r) {
      return r.second == Form::Row &&
             rowDims(op->getResult(r.first).getType(), g) != 0;
    });
    if (roles[op].runsOverRows || (rowResult && op->getNumResults() == 1))
      op->setAttr(kTokenRowsAttr, capacity);
  }
  // A training or evaluation step also returns its valid tokens (metric
  // "valid_tokens": the progress line's padding share and real tokens/s).
  auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
  bool step = false;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto name = func.getResultAttrOfType<StringAttr>(i, "tcc.name"))
      step |= name.getValue() == "loss";
  if (step) {
    b.setInsertionPoint(ret);
    Location loc = g.keyMask.getLoc();
    auto i32 = tensorTypeOf(cu).getElementType();
    Value last = SliceOp::create(
        b, loc, RankedTensorType::get({1}, i32), cu,
        b.getDenseI64ArrayAttr({g.b}), b.getDenseI64ArrayAttr({g.b + 1}),
        b.getDenseI64ArrayAttr({1}));
    Value scalar =
        ReshapeOp::create(b, loc, RankedTensorType::get({}, i32), last);
    Value count = CastOp::create(
        b, loc, RankedTensorType::get({}, b.getF32Type()), scalar);
    unsigned index = func.getNumResults();
    if (succeeded(func.insertResult(
            index, count.getType(),
            b.getDictionaryAttr(b.getNamedAttr(
                "tcc.name", b.getStringAttr(rt::kValidTokensMetric)))))) {
      ret.getOperandsMutable().append(count);
    }
  }
  // The mask's original computation, now that attention reads cu_seqlens.
  for (Operation *op : llvm::reverse(slice))
    if (op->use_empty())
      op->erase();
}

std::string Region::summary() const {
  unsigned gemms = 0, attention = 0;
  for (Operation *op : ops) {
    gemms += llvm::isa<MatmulOp, GemmOp>(op);
    attention += llvm::isa<AttentionOp, AttentionGradOp>(op);
  }
  return "packed " + std::to_string(ops.size()) + " ops (" +
         std::to_string(gemms) + " GEMMs, " + std::to_string(attention) +
         " attention) over " + std::to_string(g.n()) + " token rows; " +
         std::to_string(packs) + " packs, " + std::to_string(unpacks) +
         " unpacks";
}

struct PackTokensPass : tcc::impl::PackTokensBase<PackTokensPass> {
  using PackTokensBase::PackTokensBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto module = func->getParentOfType<ModuleOp>();
    auto mode = module ? module->getAttrOfType<StringAttr>(kPadSkipAttr)
                       : StringAttr();
    if ((mode && mode.getValue() == "off") ||
        func.getBody().getBlocks().size() != 1)
      return;
    std::string why;
    std::optional<Geometry> g = findMask(func, why);
    SmallVector<Operation *> slice;
    if (g && !maskSlice(g->keyMask, slice)) {
      why = "the key mask is computed by ops with effects";
      g.reset();
    }
    std::optional<Region> region;
    if (g) {
      region.emplace(func, *g, slice);
      if (!region->grow()) {
        why = "no attention can run packed (a forward value of the "
              "attention's region leaves it: unpacking it would change "
              "padded positions)";
        region.reset();
      }
    }
    if (region) {
      region->rewrite();
      packedOps += region->size();
    }
    if (report)
      emitRemark(func.getLoc())
          << "tcc-pack-tokens: @" << func.getSymName() << ": "
          << (region ? region->summary() : "nothing packed: " + why);
  }
};

} // namespace
