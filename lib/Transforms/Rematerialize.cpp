// tcc-rematerialize: recomputes saved forward values of @train_step in the
// backward pass until the planned session fits a memory budget. Decisions
// are measured with the real lowering (tcc-lower-pipeline on a copy), never
// estimated; the cost model only ranks the candidates.
#include "RematerializeSchedule.h"
#include "tcc/Transforms/Fuse.h"
#include "tcc/Transforms/Passes.h"
#include "tcc/Transforms/Pipelines.h"
#include "tcc/Transforms/TrainStep.h"

#include "exec/ExecOps.h"
#include "exec/MemoryPlan.h"
#include "tcc/TccTraits.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <functional>

using namespace mlir;

namespace tcc {

using remat::BlockedGradients;
using remat::bytesOf;
using remat::blockWeightGradients;
using remat::interleaveBackward;
using remat::sinkLate;
using remat::storageOf;
using remat::updateEarly;

#define GEN_PASS_DEF_REMATERIALIZE
#include "tcc/Transforms/Passes.h.inc"

namespace {

/// FLOPs one byte of memory traffic is worth in the roofline cost: a CPU
/// core's machine balance (a GPU's is 100-300, which ranks contractions
/// later still; the ranking, not the unit, is what matters).
constexpr int64_t kFlopsPerByte = 8;

/// Chosen candidates whose removal is tried once the plan fits (the most
/// expensive first): each try is one lowering.
constexpr size_t kPruneTries = 64;

/// The largest d of the weight-gradient blocks' tries (no block larger
/// than the arena budget / d): 1, 2, 4, ..., this.
constexpr int64_t kMaxBlockDivisor = 64;

/// An op's recompute cost: its FLOPs and the bytes it reads and writes.
struct Cost {
  int64_t flops = 0, bytes = 0;
  int64_t time() const { return std::max(flops, kFlopsPerByte * bytes); }
};

Cost costOf(Operation *op) {
  Cost c;
  if (op->hasTrait<OpClass::View>())
    return c; // an alias: no kernel, no traffic
  for (Value v : op->getOperands())
    c.bytes += bytesOf(v.getType());
  for (Value v : op->getResults())
    c.bytes += bytesOf(v.getType());
  c.flops = opFlops(op);
  return c;
}

/// How an op is named in reports: its kind and, when the model gave one,
/// the name of the node it came from.
std::string describe(Operation *op) {
  std::string text = op->getName().getStringRef().str();
  Location loc = op->getLoc();
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc))
    if (!fused.getLocations().empty())
      loc = fused.getLocations().front();
  if (auto name = llvm::dyn_cast<NameLoc>(loc))
    text += " " + name.getName().str();
  std::string type;
  llvm::raw_string_ostream os(type);
  os << op->getResult(0).getType();
  return text + " : " + type;
}

/// The forward part of a step and its saved values.
struct Analysis {
  SmallVector<Operation *> ops; ///< the body, in order (positions)
  llvm::DenseMap<Operation *, unsigned> position;
  llvm::DenseSet<Operation *> forward;
  /// Forward values read after the forward (by the backward pass).
  llvm::DenseSet<Value> saved;
};

Analysis analyze(func::FuncOp step) {
  Analysis a;
  Block &body = step.getBody().front();
  for (Operation &op : body) {
    a.position[&op] = a.ops.size();
    a.ops.push_back(&op);
  }
  Operation *ret = body.getTerminator();
  SmallVector<Operation *> work;
  if (Operation *loss = ret->getOperand(0).getDefiningOp())
    work.push_back(loss);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!a.forward.insert(op).second)
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        work.push_back(def);
  }
  for (Operation *op : a.forward)
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers())
        if (user != ret && !a.forward.contains(user))
          a.saved.insert(r);
  return a;
}

/// Whether an op may be recomputed: a forward op with storage in the arena
/// and nothing but tensor results and operands.
bool recomputable(const Analysis &a, Operation *op) {
  if (!a.forward.contains(op) || op->getNumRegions() != 0 ||
      op->getNumResults() == 0 || llvm::isa<ConstantOp, GetParamOp>(op))
    return false;
  return llvm::all_of(op->getResultTypes(),
                      [](Type t) { return llvm::isa<RankedTensorType>(t); });
}

/// One decision the pass can take: recompute a saved value's op with the
/// forward ops only it keeps alive.
struct Candidate {
  unsigned root;               ///< position of the saved value's op
  SmallVector<unsigned> ops;   ///< positions of the ops recomputed
  int64_t time = 0, flops = 0; ///< recompute cost
  int64_t bytes = 0;           ///< storage of the recomputed values
};

SmallVector<Candidate> candidates(const Analysis &a) {
  SmallVector<Candidate> list;
  for (Operation *op : a.ops) {
    if (!recomputable(a, op) || llvm::none_of(op->getResults(), [&](Value r) {
          return a.saved.contains(r);
        }))
      continue;
    Candidate c;
    c.root = a.position.lookup(op);
    llvm::SetVector<Operation *> closure;
    closure.insert(op);
    for (size_t i = 0; i < closure.size(); ++i)
      for (Value v : closure[i]->getOperands()) {
        Operation *def = v.getDefiningOp();
        // An operand the backward reads stays (or is a candidate itself);
        // one only this chain reads is recomputed with it.
        if (def && recomputable(a, def) && !a.saved.contains(v))
          closure.insert(def);
      }
    for (Operation *member : closure) {
      c.ops.push_back(a.position.lookup(member));
      Cost cost = costOf(member);
      c.time += cost.time();
      c.flops += cost.flops;
      if (!member->hasTrait<OpClass::View>())
        for (Value r : member->getResults())
          c.bytes += bytesOf(r.getType());
    }
    if (c.bytes > 0)
      list.push_back(std::move(c));
  }
  // Cheapest per byte freed first (the knapsack's greedy order); position
  // breaks ties so the order is deterministic.
  llvm::stable_sort(list, [](const Candidate &x, const Candidate &y) {
    return static_cast<__int128>(x.time) * y.bytes <
           static_cast<__int128>(y.time) * x.bytes;
  });
  return list;
}

/// The checkpoints of Chen's sqrt(N) segments: positions of the forward
/// ops whose result is the only forward value live across them (the
/// residual stream between blocks), in order.
SmallVector<unsigned> cuts(const Analysis &a) {
  // Each forward value's storage: its def and last forward reader.
  llvm::MapVector<Value, std::pair<unsigned, unsigned>> life;
  for (auto [p, op] : llvm::enumerate(a.ops)) {
    if (!a.forward.contains(op))
      continue;
    for (Value v : op->getOperands())
      if (auto it = life.find(storageOf(v)); it != life.end())
        it->second.second = p;
    if (recomputable(a, op) && !op->hasTrait<OpClass::View>())
      for (Value r : op->getResults())
        life[r] = {unsigned(p), unsigned(p)};
  }
  // Values live across the boundary after each position.
  std::vector<int> across(a.ops.size() + 1, 0);
  for (auto &[v, span] : life)
    if (span.second > span.first) {
      ++across[span.first];
      --across[span.second];
    }
  SmallVector<unsigned> out;
  int live = 0;
  for (unsigned p = 0; p < a.ops.size(); ++p) {
    live += across[p];
    Operation *op = a.ops[p];
    if (live == 1 && op->getNumResults() == 1 && life.count(op->getResult(0)) &&
        life.lookup(op->getResult(0)).second > p)
      out.push_back(p);
  }
  return out;
}

/// Rewrites `step` (whose body has the analysed one's positions): every
/// op at a position in `chosen` is cloned right before the first op after
/// the forward that reads it, and those ops read the clone.
void recompute(func::FuncOp step, const llvm::DenseSet<unsigned> &chosen,
               const Analysis &a) {
  SmallVector<Operation *> ops;
  for (Operation &op : step.getBody().front())
    ops.push_back(&op);
  llvm::DenseSet<Operation *> recomputed, stored;
  for (unsigned p : chosen) {
    recomputed.insert(ops[p]);
    if (llvm::any_of(a.ops[p]->getResults(),
                     [&](Value r) { return a.saved.contains(r); }))
      stored.insert(ops[p]);
  }
  Operation *ret = step.getBody().front().getTerminator();
  llvm::DenseMap<Operation *, Operation *> clones;
  OpBuilder b(step.getContext());
  std::function<Operation *(Operation *, Operation *)> materialize =
      [&](Operation *op, Operation *before) -> Operation * {
    if (Operation *c = clones.lookup(op))
      return c;
    IRMapping map;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp(); def && recomputed.contains(def))
        map.map(v, materialize(def, before)
                       ->getResult(llvm::cast<OpResult>(v).getResultNumber()));
    b.setInsertionPoint(before);
    Operation *c = b.clone(*op, map);
    c->setAttr("tcc.remat", b.getUnitAttr());
    // A value the backward pass read (so stored without a budget) stays a
    // kernel's result, in the forward and recomputed (Fuse.cpp: 16-bit
    // kernels round only what they store).
    if (stored.contains(op)) {
      op->setAttr(kRematStoredAttr, b.getUnitAttr());
      c->setAttr(kRematStoredAttr, b.getUnitAttr());
    }
    clones[op] = c;
    return c;
  };
  for (auto [p, op] : llvm::enumerate(ops)) {
    if (op == ret || a.forward.contains(a.ops[p]))
      continue;
    for (OpOperand &use : op->getOpOperands()) {
      Operation *def = use.get().getDefiningOp();
      if (def && recomputed.contains(def))
        use.set(materialize(def, op)->getResult(
            llvm::cast<OpResult>(use.get()).getResultNumber()));
    }
  }
}

struct RematerializePass : impl::RematerializeBase<RematerializePass> {
  using Base::Base;

  /// The largest planned arena over the functions of `module` lowered
  /// after recomputing the ops of `chosen`, and the function that has it.
  FailureOr<std::pair<int64_t, std::string>>
  measure(ModuleOp module, const Analysis &a,
          const llvm::DenseSet<unsigned> &chosen, bool early) {
    OwningOpRef<ModuleOp> copy = module.clone();
    auto step = copy->lookupSymbol<func::FuncOp>("train_step");
    recompute(step, chosen, a);
    if (early) {
      updateEarly(step);
      sinkLate(step);
    }
    LowerConfig config;
    config.roots.assign(trainingRoots().begin(), trainingRoots().end());
    config.order = order;
    if (early)
      step->setAttr(kReuseOperandsAttr, UnitAttr::get(step.getContext()));
    PassManager pm(module.getContext());
    for (const PipelineStage &stage : lowerStages(config))
      stage.add(pm);
    if (failed(pm.run(*copy)))
      return failure();
    std::pair<int64_t, std::string> peak{0, ""};
    for (auto f : copy->getOps<func::FuncOp>())
      if (auto bytes = f->getAttrOfType<IntegerAttr>(kArenaBytesAttr))
        if (bytes.getInt() > peak.first)
          peak = std::make_pair(bytes.getInt(), f.getSymName().str());
    return peak;
  }

  /// What the search found for one order of the step.
  struct Outcome {
    int64_t after = 0;        ///< the smallest arena reached
    std::string peakFunction; ///< the function that has it
    llvm::DenseSet<unsigned> chosen;
    int64_t segments = 0;
    int64_t time = 0; ///< recompute cost of `chosen`
    bool fits = false;
  };

  /// The recomputation that fits `arenaBudget` at the least cost the
  /// search finds for the step of `module` (analysed as `a`), with the
  /// updates early and ops late; or, when nothing fits, the smallest arena
  /// reached.
  FailureOr<Outcome> search(ModuleOp module, const Analysis &a,
                            int64_t arenaBudget) {
    SmallVector<Candidate> list = candidates(a);
    auto chosenOf = [&](ArrayRef<const Candidate *> picks) {
      llvm::DenseSet<unsigned> set;
      for (const Candidate *c : picks)
        set.insert(c->ops.begin(), c->ops.end());
      return set;
    };
    auto arenaOfSet = [&](const llvm::DenseSet<unsigned> &set) {
      return measure(module, a, set, /*early=*/true);
    };
    auto arenaOf = [&](ArrayRef<const Candidate *> picks) {
      return arenaOfSet(chosenOf(picks));
    };
    Outcome out;
    FailureOr<std::pair<int64_t, std::string>> now = arenaOf({});
    if (failed(now))
      return failure();
    out.after = now->first;
    out.peakFunction = now->second;
    SmallVector<const Candidate *> picks;
    // Greedy in the ranking's order, measured: a candidate stays when
    // the plan does not grow with it (recomputing a value whose operand
    // is recomputed too moves that operand's clone earlier, so more is
    // not always less).
    for (const Candidate &c : list) {
      if (out.after <= arenaBudget)
        break;
      picks.push_back(&c);
      FailureOr<std::pair<int64_t, std::string>> m = arenaOf(picks);
      if (failed(m))
        return failure();
      if (m->first <= out.after) {
        out.after = m->first;
        out.peakFunction = m->second;
      } else {
        picks.pop_back();
      }
    }
    if (out.after <= arenaBudget) {
      // Drop the most expensive choices the plan does not need.
      SmallVector<const Candidate *> byCost(picks);
      llvm::stable_sort(byCost, [](const Candidate *x, const Candidate *y) {
        return x->time > y->time;
      });
      for (const Candidate *c : ArrayRef(byCost).take_front(
               std::min(kPruneTries, byCost.size()))) {
        SmallVector<const Candidate *> without;
        for (const Candidate *p : picks)
          if (p != c)
            without.push_back(p);
        FailureOr<std::pair<int64_t, std::string>> m = arenaOf(without);
        if (failed(m))
          return failure();
        if (m->first <= arenaBudget) {
          picks = without;
          out.after = m->first;
        }
      }
      out.chosen = chosenOf(picks);
      out.fits = true;
    } else {
      // The fallback, Chen's sqrt(N) segments: every recomputable saved
      // value is recomputed but the checkpoints, every s-th cut of the
      // forward (s = 1, 2, ...: fewer checkpoints, longer segments); the
      // first s that fits.
      SmallVector<const Candidate *> all;
      for (const Candidate &c : list)
        all.push_back(&c);
      llvm::DenseSet<unsigned> everything = chosenOf(all);
      SmallVector<unsigned> cutList = cuts(a);
      for (size_t s = 1; s <= cutList.size(); ++s) {
        llvm::DenseSet<unsigned> set = everything;
        for (size_t j = s - 1; j < cutList.size(); j += s)
          set.erase(cutList[j]);
        FailureOr<std::pair<int64_t, std::string>> m = arenaOfSet(set);
        if (failed(m))
          return failure();
        if (m->first < out.after) {
          out.after = m->first;
          out.peakFunction = m->second;
        }
        if (m->first <= arenaBudget) {
          out.chosen = std::move(set);
          out.after = m->first;
          out.segments = int64_t(s);
          out.fits = true;
          break;
        }
      }
    }
    for (unsigned p : out.chosen)
      out.time += costOf(a.ops[p]).time();
    return out;
  }

  void runOnOperation() override {
    if (budget <= 0)
      return;
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step || step.isExternal()) {
      module.emitError("tcc-rematerialize: the module has no @train_step");
      return signalPassFailure();
    }
    int64_t arenaBudget = budget - fixedBytes;
    Analysis a = analyze(step);
    FailureOr<std::pair<int64_t, std::string>> before =
        measure(module, a, {}, /*early=*/false);
    if (failed(before))
      return signalPassFailure();
    // Past the unbudgeted plan every plan moves the updates early and ops
    // late first: it costs nothing.
    bool early = before->first > arenaBudget;
    llvm::DenseSet<unsigned> chosen;
    int64_t after = before->first, segments = 0, interleaved = 0;
    BlockedGradients blocked;
    if (early) {
      FailureOr<Outcome> found = search(module, a, arenaBudget);
      if (failed(found))
        return signalPassFailure();
      // Several micro-batches: the search again with their backward
      // passes interleaved; the order that fits at less cost (or, when
      // neither fits, reaches less) wins.
      auto accum = step->getAttrOfType<IntegerAttr>(kAccumAttr);
      if (accum && accum.getInt() > 1) {
        OwningOpRef<ModuleOp> copy = module.clone();
        auto other = copy->lookupSymbol<func::FuncOp>("train_step");
        if (interleaveBackward(other) > 0) {
          FailureOr<Outcome> alt = search(*copy, analyze(other), arenaBudget);
          if (failed(alt))
            return signalPassFailure();
          bool better = alt->fits != found->fits
                            ? alt->fits
                            : (alt->fits ? alt->time < found->time
                                         : alt->after < found->after);
          if (better) {
            interleaved = interleaveBackward(step);
            a = analyze(step);
            found = std::move(alt);
          }
        }
      }
      // Nothing fits with the step's ops: large weight gradients made in
      // row blocks, each applied before the next is made (no block larger
      // than arenaBudget / d, d = 1, 2, 4, ... until the plan fits; of the
      // smallest arena reached when the budget leaves none, so the error
      // names what the blocks reach).
      if (!found->fits) {
        int64_t target = arenaBudget > 0 ? int64_t(arenaBudget) : found->after;
        BlockedGradients last;
        for (int64_t d = 1; d <= kMaxBlockDivisor; d *= 2) {
          OwningOpRef<ModuleOp> copy = module.clone();
          auto other = copy->lookupSymbol<func::FuncOp>("train_step");
          BlockedGradients cut = blockWeightGradients(other, target, d);
          if (cut.blocks == last.blocks)
            continue; // the same step as the last try
          last = cut;
          FailureOr<Outcome> alt = search(*copy, analyze(other), arenaBudget);
          if (failed(alt))
            return signalPassFailure();
          if (!alt->fits) {
            if (alt->after < found->after) {
              found->after = alt->after;
              found->peakFunction = alt->peakFunction;
            }
            continue;
          }
          blocked = blockWeightGradients(step, target, d);
          a = analyze(step);
          found = std::move(alt);
          break;
        }
      }
      if (!found->fits) {
        // The unbudgeted order may plan less than any reordered one (every
        // update waiting for every gradient, as under loss scaling).
        if (before->first < found->after) {
          found->after = before->first;
          found->peakFunction = before->second;
        }
        int64_t total = fixedBytes + found->after;
        auto diag = module.emitError()
                    << "memory budget " << int64_t(budget)
                    << " bytes cannot be met: the smallest session tcc plans "
                       "is "
                    << total << " bytes, ";
        if (fixedBytes >= found->after)
          diag << "dominated by the " << int64_t(fixedBytes)
               << " bytes outside the arena (parameters, working copies, "
                  "optimizer state, inputs, constants; arena "
               << found->after << " bytes)";
        else
          diag << "dominated by @" << found->peakFunction << "'s arena of "
               << found->after << " bytes (" << int64_t(fixedBytes)
               << " bytes outside the arena)";
        return signalPassFailure();
      }
      after = found->after;
      chosen = std::move(found->chosen);
      segments = found->segments;
    }

    int64_t stepFlops = 0, extraFlops = 0;
    for (Operation *op : a.ops)
      stepFlops += costOf(op).flops;
    Builder b(module.getContext());
    SmallVector<Attribute> names;
    SmallVector<unsigned> positions(chosen.begin(), chosen.end());
    llvm::sort(positions);
    for (unsigned p : positions) {
      extraFlops += costOf(a.ops[p]).flops;
      names.push_back(b.getStringAttr(describe(a.ops[p])));
    }
    recompute(step, chosen, a);
    int64_t moved = early ? updateEarly(step) : 0;
    int64_t sunk = early ? sinkLate(step) : 0;
    NamedAttribute fields[] = {
        b.getNamedAttr("budget", b.getI64IntegerAttr(budget)),
        b.getNamedAttr("fixed_bytes", b.getI64IntegerAttr(fixedBytes)),
        b.getNamedAttr("arena_before", b.getI64IntegerAttr(before->first)),
        b.getNamedAttr("arena_after", b.getI64IntegerAttr(after)),
        b.getNamedAttr("early_updates", b.getI64IntegerAttr(moved)),
        b.getNamedAttr("sunk_ops", b.getI64IntegerAttr(sunk)),
        b.getNamedAttr("interleaved_ops", b.getI64IntegerAttr(interleaved)),
        b.getNamedAttr("segments", b.getI64IntegerAttr(segments)),
        b.getNamedAttr("step_flops", b.getI64IntegerAttr(stepFlops)),
        b.getNamedAttr("extra_flops", b.getI64IntegerAttr(extraFlops)),
        b.getNamedAttr("recomputed", b.getArrayAttr(names)),
    };
    SmallVector<NamedAttribute> all(std::begin(fields), std::end(fields));
    if (blocked.gradients > 0) {
      all.push_back(b.getNamedAttr("blocked_gradients",
                                   b.getI64IntegerAttr(blocked.gradients)));
      all.push_back(b.getNamedAttr("gradient_blocks",
                                   b.getI64IntegerAttr(blocked.blocks)));
    }
    step->setAttr("tcc.remat", b.getDictionaryAttr(all));
    // The lowering plans with the operand reuse the search measured.
    if (early)
      step->setAttr(kReuseOperandsAttr, b.getUnitAttr());
  }
};

} // namespace

} // namespace tcc
