//===- plan_read.cpp - reading and checking plan.json ---------------------===//

#include "plan/json_file.h"

#include "plan/calls.h"
#include "plan/liveness.h"

#include <algorithm>
#include <set>

namespace tcc::rt {

using namespace json_read;

namespace {

/// The plan's "kernels": one entry per symbol, each a generated kernel's
/// name (tcc_ and identifier characters) and buffers.
std::vector<KernelSignature> readKernels(const JsonFile &file,
                                         const json &doc) {
  const json &list = file.arrayField(doc, "", "kernels");
  std::vector<KernelSignature> out;
  auto buffer = [&](const json &j, const std::string &w) {
    KernelBuffer b;
    b.dtype = file.dtype(j, w);
    if (file.field(j, w, "elements") == "output") {
      b.elements = kOutputElements;
      return b;
    }
    b.elements = file.intField(j, w, "elements");
    if (b.elements < 0 || b.elements > (INT64_C(1) << 56))
      file.bad(w + ".elements",
               std::to_string(b.elements) + " is out of range");
    return b;
  };
  for (size_t i = 0; i < list.size(); ++i) {
    std::string w = JsonFile::at("kernels", i);
    KernelSignature k;
    k.symbol = file.stringField(list[i], w, "symbol");
    if (k.symbol.size() <= 4 || k.symbol.compare(0, 4, "tcc_") != 0 ||
        k.symbol.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
            std::string::npos)
      file.bad(w + ".symbol", "'" + k.symbol +
                                  "' is not a generated kernel's name "
                                  "(tcc_ and letters, digits, _)");
    for (const KernelSignature &other : out)
      if (other.symbol == k.symbol)
        file.bad(w + ".symbol", "duplicate kernel '" + k.symbol + "'");
    const json &ins = file.arrayField(list[i], w, "inputs");
    for (size_t j = 0; j < ins.size(); ++j)
      k.inputs.push_back(buffer(ins[j], JsonFile::at(w + ".inputs", j)));
    k.output = buffer(file.field(list[i], w, "output"), w + ".output");
    if (list[i].contains("stores")) {
      const json &stores = file.arrayField(list[i], w, "stores");
      if (stores.empty())
        file.bad(w + ".stores", "is empty (absent when a kernel stores none)");
      for (size_t j = 0; j < stores.size(); ++j)
        k.stores.push_back(
            buffer(stores[j], JsonFile::at(w + ".stores", j)));
    }
    if (list[i].contains("outputs_per_block")) {
      k.outputsPerBlock = file.intField(list[i], w, "outputs_per_block");
      if (k.outputsPerBlock < 1 || k.outputsPerBlock > 1024)
        file.bad(w + ".outputs_per_block",
                 std::to_string(k.outputsPerBlock) +
                     " is out of range (1 to 1024 outputs per block)");
      k.blockThreads = file.intField(list[i], w, "block_threads");
      if (k.blockThreads < 32 || k.blockThreads > 1024 || k.blockThreads % 32)
        file.bad(w + ".block_threads",
                 std::to_string(k.blockThreads) +
                     " is not a CUDA block of whole warps (32 to 1024 "
                     "threads)");
      if (list[i].contains("row_slices")) {
        k.rowSlices = file.intField(list[i], w, "row_slices");
        if (k.rowSlices < 2 || k.rowSlices > 65535)
          file.bad(w + ".row_slices",
                   std::to_string(k.rowSlices) +
                       " is out of range (2 to 65535 slices; absent for 1)");
        // At least a double per (slice, output); at most 16 GiB.
        k.workspaceBytes = file.intField(list[i], w, "workspace_bytes");
        if (k.workspaceBytes < 8 * k.rowSlices * k.output.elements ||
            k.workspaceBytes > (int64_t(1) << 34))
          file.bad(w + ".workspace_bytes",
                   std::to_string(k.workspaceBytes) +
                       " does not fit row_slices x output doubles (" +
                       std::to_string(8 * k.rowSlices * k.output.elements) +
                       " bytes or more, at most 16 GiB)");
      }
    }
    out.push_back(std::move(k));
  }
  return out;
}

/// A kernel step against its kernel table entry: the same arity, dtypes and
/// output size, inputs of at least the elements the kernel reads.
void checkKernelStep(const JsonFile &file, const std::string &sw,
                     const Step &step, const Function &fn, const Plan &plan) {
  const KernelSignature *k = plan.kernel(step.symbol);
  if (!k)
    file.bad(sw + ".symbol", "'" + step.symbol +
                                 "' is not a kernel of the plan's kernel "
                                 "table");
  if (step.inputs.size() != k->inputs.size())
    file.bad(sw + ".inputs", std::to_string(step.inputs.size()) +
                                 " inputs, but kernel '" + step.symbol +
                                 "' takes " + std::to_string(k->inputs.size()));
  // An input needs at least its entry's elements, exactly the step's for
  // "output"; the output exactly its entry's, or the step's for "output".
  auto check = [&](const std::string &w, int64_t id, const KernelBuffer &b,
                   bool output) {
    const Value &v = fn.values[id];
    bool perStep = b.elements == kOutputElements;
    int64_t want = perStep ? step.elements : b.elements;
    bool exact = output || perStep;
    if (v.dtype != b.dtype || (exact ? v.elements != want : v.elements < want))
      file.bad(w, "value " + std::to_string(id) + " (" + describe(v) +
                      ") does not fit kernel '" + step.symbol + "', which " +
                      (output ? "writes " : "reads ") +
                      (exact ? "" : "up to ") + std::to_string(want) + " " +
                      data::dtypeName(b.dtype) + " elements there");
  };
  if (step.outputs.size() != 1 + k->stores.size())
    file.bad(sw + ".outputs",
             std::to_string(step.outputs.size()) + " outputs, but kernel '" +
                 step.symbol + "' writes " +
                 std::to_string(1 + k->stores.size()) +
                 " (its output and its stores)");
  for (size_t i = 0; i < step.inputs.size(); ++i)
    check(JsonFile::at(sw + ".inputs", i), step.inputs[i], k->inputs[i], false);
  check(JsonFile::at(sw + ".outputs", 0), step.outputs[0], k->output, true);
  for (size_t i = 0; i < k->stores.size(); ++i)
    check(JsonFile::at(sw + ".outputs", i + 1), step.outputs[i + 1],
          k->stores[i], true);
}

/// What a function's values and results are checked against.
struct PlanContext {
  const Plan &plan;
  bool inference;
  const std::vector<TensorDesc> &constants;
  const std::string &constantsFile;
};

/// A call step's "token_rows": a call over packed token rows, after the
/// function's pack_index step of as many rows.
void readTokenRows(const JsonFile &file, const json &sj, const std::string &sw,
                   const Function &fn, Step &step) {
  step.tokenRows = file.intField(sj, sw, "token_rows");
  if (step.kind == Step::Kernel) {
    if (step.tokenRows <= 0 || step.elements % step.tokenRows != 0)
      file.bad(sw + ".token_rows",
               "a kernel over packed token rows has a positive number of "
               "them that divides its elements");
    if (step.outputs.size() > 1)
      file.bad(sw + ".token_rows",
               "a kernel with stores runs over all of its rows");
  }
  static const Op rowOps[] = {
      Op::Matmul,       Op::Gemm,           Op::LayerNorm,
      Op::LayerNormGrad, Op::CrossEntropy,  Op::CrossEntropyGrad,
      Op::Softmax,      Op::SoftmaxGrad,    Op::LogSoftmax,
      Op::LogSoftmaxGrad};
  if (step.kind == Step::Call &&
      std::find(std::begin(rowOps), std::end(rowOps), step.op) ==
          std::end(rowOps))
    file.bad(sw + ".token_rows", std::string("a ") + opName(step.op) +
                                     " call does not run over token rows");
  for (const Step &earlier : fn.steps)
    if (earlier.kind == Step::Call && earlier.op == Op::PackIndex &&
        fn.values[earlier.outputs[0]].elements == step.tokenRows)
      return;
  file.bad(sw + ".token_rows",
           std::to_string(step.tokenRows) +
               " rows, but no earlier pack_index step packs that many");
}

/// A call step's "attrs": exactly the op's attributes (library_ops.inc),
/// each of its kind, the op's defaults for those left out.
void readAttrs(const JsonFile &file, const json *attrs, const std::string &sw,
               Step &step) {
  const OpSchema &schema = opSchema(step.op);
  step.attrs = Attrs();
  static const json empty = json::object();
  const json &obj = attrs ? *attrs : empty;
  if (!obj.is_object())
    file.bad(sw + ".attrs", "is not an object");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = false;
    for (const AttrSpec &a : schema.attrs)
      known |= it.key() == a.name;
    if (!known) {
      std::string names;
      for (const AttrSpec &a : schema.attrs)
        names += (names.empty() ? "" : ", ") + std::string(a.name);
      file.bad(sw, "unknown attribute '" + it.key() + "' (" + schema.name +
                       (names.empty() ? " has none)" : " has " + names + ")"));
    }
  }
  for (const AttrSpec &a : schema.attrs) {
    auto it = obj.find(a.name);
    if (it == obj.end()) {
      if (a.required)
        file.bad(sw, std::string("missing attribute '") + a.name + "'");
      a.setDefault(step.attrs);
      continue;
    }
    const json &v = *it;
    std::string aw = sw + ": attribute '" + a.name + "'";
    switch (a.kind) {
    case AttrKind::Bool:
      if (!v.is_boolean())
        file.bad(aw, "is not a bool");
      a.asBool(step.attrs) = v.get<bool>();
      break;
    case AttrKind::Int:
      if (!v.is_number_integer() ||
          (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)))
        file.bad(aw, "is not an integer");
      a.asInt(step.attrs) = v.get<int64_t>();
      break;
    case AttrKind::Float:
      if (!v.is_number())
        file.bad(aw, "is not a number");
      a.asFloat(step.attrs) = v.get<double>();
      break;
    }
  }
}

/// A call step's operands and results are the op's, in its order; absent
/// optional ones are -1, and trailing ones may be left out.
void checkArity(const JsonFile &file, const std::string &sw, Step &step) {
  const OpSchema &schema = opSchema(step.op);
  auto arity = [&](std::vector<int64_t> &ids,
                   const std::vector<OperandSpec> &specs, const char *what) {
    size_t required = specs.size();
    while (required > 0 && specs[required - 1].optional)
      --required;
    if (ids.size() < required || ids.size() > specs.size())
      file.bad(sw, std::to_string(ids.size()) + " " + what + ", expected " +
                       std::to_string(specs.size()) +
                       " (absent optional ones as -1)");
    ids.resize(specs.size(), -1);
    for (size_t i = 0; i < specs.size(); ++i)
      if (ids[i] < 0 && !specs[i].optional)
        file.bad(sw, std::string(what).substr(0, strlen(what) - 1) + " " +
                         std::to_string(i) + " (" + specs[i].name +
                         ") is not optional but is -1");
  };
  arity(step.inputs, schema.operands, "inputs");
  arity(step.outputs, schema.results, "outputs");
}

/// A collective step's fields: which collective, its reduction (not for
/// all_gather), world_size (not for all_reduce), bucket and stream.
void readCollective(const JsonFile &file, const json &sj, const std::string &sw,
                    Step &step) {
  std::string op = file.stringField(sj, sw, "op");
  if (op == "all_reduce")
    step.collective = CollectiveOp::AllReduce;
  else if (op == "reduce_scatter")
    step.collective = CollectiveOp::ReduceScatter;
  else if (op == "all_gather")
    step.collective = CollectiveOp::AllGather;
  else
    file.bad(sw + ".op", "unknown collective '" + op +
                             "' (expected all_reduce, reduce_scatter or "
                             "all_gather)");
  std::string where = sw + " (" + op + ")";
  if (step.collective != CollectiveOp::AllGather) {
    std::string r = file.stringField(sj, where, "reduction");
    if (r == "sum")
      step.reduction = Reduction::Sum;
    else if (r == "mean")
      step.reduction = Reduction::Mean;
    else
      file.bad(where + ".reduction",
               "unknown reduction '" + r + "' (expected sum or mean)");
  }
  step.worldSize = step.collective == CollectiveOp::AllReduce
                       ? 1
                       : file.intField(sj, where, "world_size");
  if (step.worldSize < 1)
    file.bad(where + ".world_size",
             "is " + std::to_string(step.worldSize) + ", not positive");
  step.bucket = file.intField(sj, where, "bucket");
  step.stream = file.intField(sj, where, "stream");
  if (step.bucket < 0 || step.stream < 0)
    file.bad(where, "bucket and stream are non-negative");
  const json *gradients = file.optField(sj, where, "gradients");
  const json *scattered = file.optField(sj, where, "scattered_only");
  if ((gradients || scattered) && step.collective != CollectiveOp::AllReduce)
    file.bad(where, "gradients and scattered_only belong to all_reduce");
  if (gradients)
    step.gradients = file.toInt(*gradients, where + ".gradients");
  if (scattered) {
    if (!scattered->is_boolean())
      file.bad(where + ".scattered_only",
               "expected true or false, got " + brief(*scattered));
    step.scatteredOnly = scattered->get<bool>();
  }
  if (step.scatteredOnly &&
      (step.gradients > 0 || step.reduction != Reduction::Sum))
    file.bad(where + ".scattered_only",
             "a scattered_only all_reduce sums partial sums: reduction sum, "
             "no gradients");
}

/// exec's collective verifiers, for the plan: one output per input, of its
/// dtype, and its shape (the leading dim divided or multiplied by
/// world_size for reduce_scatter / all_gather).
void checkCollective(const JsonFile &file, const std::string &sw,
                     const Step &step, const Function &fn) {
  if (step.inputs.empty() || step.inputs.size() != step.outputs.size())
    file.bad(sw, std::to_string(step.inputs.size()) + " inputs and " +
                     std::to_string(step.outputs.size()) +
                     " outputs; a collective has one output per input");
  if (step.gradients < 0 || step.gradients > int64_t(step.inputs.size()))
    file.bad(sw + ".gradients", std::to_string(step.gradients) +
                                    " is not a count of its " +
                                    std::to_string(step.inputs.size()) +
                                    " inputs");
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    const Value &in = fn.values[step.inputs[i]];
    const Value &out = fn.values[step.outputs[i]];
    std::vector<int64_t> shape = in.shape;
    if (step.collective != CollectiveOp::AllReduce) {
      if (shape.empty())
        file.bad(sw, "input " + std::to_string(i) + " is a scalar; " +
                         collectiveName(step.collective) +
                         " splits the leading dimension");
      if (step.collective == CollectiveOp::AllGather)
        shape[0] *= step.worldSize;
      else if (shape[0] % step.worldSize != 0)
        file.bad(sw, "input " + std::to_string(i) + " (" + describe(in) +
                         ") does not split into world_size " +
                         std::to_string(step.worldSize) + " slices");
      else
        shape[0] /= step.worldSize;
    }
    if (out.dtype != in.dtype || out.shape != shape)
      file.bad(sw, "output " + std::to_string(i) + " is " + describe(out) +
                       ", expected " + data::dtypeName(in.dtype) + " " +
                       shapeString(shape) + " for input " + describe(in));
  }
}

void readFunction(const JsonFile &file, const json &doc, const PlanContext &ctx,
                  Function &fn) {
  const Plan &art = ctx.plan;
  const std::string where = "functions." + fn.name;
  fn.arenaBytes = file.intField(doc, where, "arena_bytes");
  if (fn.arenaBytes < 0)
    file.bad(where + ".arena_bytes", "is negative");
  if (fn.arenaBytes > kMaxArenaBytes)
    file.bad(where + ".arena_bytes",
             std::to_string(fn.arenaBytes) +
                 " bytes is more than a process can address (" +
                 std::to_string(kMaxArenaBytes) + ")");
  fn.inputs = file.tensors(doc, where, "inputs");

  const json &values = file.arrayField(doc, where, "values");
  for (size_t i = 0; i < values.size(); ++i) {
    std::string vw = JsonFile::at(where + ".values", i);
    const json &vj = values[i];
    // "id" is optional and redundant: when written it must be the position.
    if (const json *id = file.optField(vj, vw, "id"))
      if (file.toInt(*id, vw + ".id") != int64_t(i))
        file.bad(vw + ".id", "id " + brief(*id) + " at position " +
                                 std::to_string(i) + " (id = index)");
    Value v;
    v.dtype = file.dtype(vj, vw);
    file.shape(vj, vw, v.dtype, v.shape, v.elements, v.bytes);
    std::string storage = file.stringField(vj, vw, "storage");
    auto slot = [&](const std::vector<TensorDesc> &slots, const char *what) {
      v.index = file.intField(vj, vw, "index");
      if (v.index < 0 || v.index >= int64_t(slots.size()))
        file.bad(vw + ".index",
                 std::string(what) + " index " + std::to_string(v.index) +
                     " is out of range (" + std::to_string(slots.size()) + " " +
                     what + (slots.size() == 1 ? ")" : "s)"));
      const TensorDesc &t = slots[v.index];
      if (t.dtype != v.dtype || t.bytes != v.bytes)
        file.bad(vw, describe(v) + " (" + std::to_string(v.bytes) +
                         " bytes) does not fit " + what + " " +
                         std::to_string(v.index) + " '" + t.name + "', " +
                         describe(t) + " (" + std::to_string(t.bytes) +
                         " bytes)");
    };
    if (storage == "arena") {
      v.storage = Storage::Arena;
      v.offset = file.intField(vj, vw, "offset");
      if (v.offset < 0 || v.offset % kArenaAlignment != 0)
        file.bad(vw + ".offset", "arena offset " + std::to_string(v.offset) +
                                     " is not a non-negative multiple of " +
                                     std::to_string(kArenaAlignment));
      if (v.offset > fn.arenaBytes || v.bytes > fn.arenaBytes - v.offset)
        file.bad(vw, "arena offset " + std::to_string(v.offset) + " + " +
                         std::to_string(v.bytes) + " bytes (" + describe(v) +
                         ") ends beyond arena_bytes " +
                         std::to_string(fn.arenaBytes));
    } else if (storage == "param") {
      v.storage = Storage::Param;
      slot(art.params, "param");
    } else if (storage == "opt_state") {
      v.storage = Storage::OptState;
      slot(art.optState, "opt_state");
    } else if (storage == "working") {
      // The working copy of param `index`: its working dtype, the param's
      // element count (a reshape alias has another shape, as for param).
      v.storage = Storage::Working;
      v.index = file.intField(vj, vw, "index");
      if (v.index < 0 || v.index >= int64_t(art.params.size()))
        file.bad(vw + ".index",
                 "param index " + std::to_string(v.index) +
                     " is out of range (" + std::to_string(art.params.size()) +
                     (art.params.size() == 1 ? " param)" : " params)"));
      const TensorDesc &p = art.params[v.index];
      if (!p.working)
        file.bad(vw, "the working copy of param " + std::to_string(v.index) +
                         " '" + p.name + "', which has none (params[" +
                         std::to_string(v.index) + "] has no 'working')");
      if (v.dtype != *p.working || v.elements != p.elements)
        file.bad(vw, describe(v) + " does not fit the working copy of param " +
                         std::to_string(v.index) + " '" + p.name + "', " +
                         data::dtypeName(*p.working) + " " +
                         shapeString(p.shape));
    } else if (storage == "input") {
      v.storage = Storage::Input;
      slot(fn.inputs, "input");
    } else if (storage == "step") {
      v.storage = Storage::Step;
      if (v.dtype != DType::I64 || v.elements != 1)
        file.bad(vw, "the step counter is an i64 scalar, not " + describe(v));
    } else if (storage == "constant") {
      v.storage = Storage::Constant;
      v.name = file.stringField(vj, vw, "name");
      const TensorDesc *c = nullptr;
      for (const TensorDesc &t : ctx.constants)
        if (t.name == v.name)
          c = &t;
      if (!c)
        file.bad(vw + ".name",
                 "no constant '" + v.name + "' in " +
                     (ctx.constantsFile.empty()
                          ? std::string("the artifact (files has no "
                                        "'constants')")
                          : ctx.constantsFile));
      if (c->dtype != v.dtype || c->bytes != v.bytes)
        file.bad(vw, describe(v) + " does not fit constant '" + v.name + "', " +
                         describe(*c));
    } else {
      file.bad(vw + ".storage",
               "unknown storage '" + storage +
                   "' (expected arena, param, opt_state, working, step, "
                   "input or constant)");
    }
    fn.values.push_back(std::move(v));
  }

  auto valueId = [&](const json &j, const std::string &w, bool allowAbsent) {
    int64_t id = file.toInt(j, w);
    if (id == -1 && allowAbsent)
      return id;
    if (id < 0 || id >= int64_t(fn.values.size()))
      file.bad(w, "value id " + std::to_string(id) + " is out of range (" +
                      std::to_string(fn.values.size()) + " values)");
    return id;
  };
  const json &steps = file.arrayField(doc, where, "steps");
  for (size_t s = 0; s < steps.size(); ++s) {
    std::string sw = JsonFile::at(where + ".steps", s);
    const json &sj = steps[s];
    Step step;
    std::string kind = file.stringField(sj, sw, "kind");
    bool call = kind == "call";
    if (kind == "kernel") {
      step.kind = Step::Kernel;
    } else if (call) {
      step.kind = Step::Call;
      std::string op = file.stringField(sj, sw, "op");
      if (!parseOp(op, step.op))
        file.bad(sw + ".op", "unknown op '" + op +
                                 "' (library ops: " + libraryOpNames() + ")");
      sw += " (" + op + ")";
    } else if (kind == "collective") {
      step.kind = Step::Collective;
      readCollective(file, sj, sw, step);
      sw += std::string(" (") + collectiveName(step.collective) + ")";
    } else {
      file.bad(sw + ".kind", "unknown step kind '" + kind +
                                 "' (expected kernel, call or collective)");
    }
    const json &ins = file.arrayField(sj, sw, "inputs");
    const json &outs = file.arrayField(sj, sw, "outputs");
    for (size_t i = 0; i < ins.size(); ++i)
      step.inputs.push_back(
          valueId(ins[i], JsonFile::at(sw + ".inputs", i), call));
    for (size_t i = 0; i < outs.size(); ++i) {
      int64_t id = valueId(outs[i], JsonFile::at(sw + ".outputs", i), call);
      step.outputs.push_back(id);
      if (id < 0)
        continue;
      Storage st = fn.values[id].storage;
      if (st != Storage::Arena && st != Storage::Param &&
          st != Storage::OptState && st != Storage::Working)
        file.bad(JsonFile::at(sw + ".outputs", i),
                 "value " + std::to_string(id) + " has storage '" +
                     storageName(st) + "', which a step cannot write");
    }
    if (call) {
      checkArity(file, sw, step);
      readAttrs(file, file.optField(sj, sw, "attrs"), sw, step);
      CallCheck check(step, fn,
                      [&](const std::string &msg) { file.bad(sw, msg); });
      opSchema(step.op).check(check);
      if (file.optField(sj, sw, "token_rows"))
        readTokenRows(file, sj, sw, fn, step);
    } else if (step.kind == Step::Collective) {
      checkCollective(file, sw, step, fn);
    } else {
      step.symbol = file.stringField(sj, sw, "symbol");
      if (step.symbol.empty())
        file.bad(sw + ".symbol", "is empty");
      step.elements = file.intField(sj, sw, "elements");
      if (step.outputs.empty())
        file.bad(sw + ".outputs", "a kernel has an output, got none");
      const Value &out = fn.values[step.outputs[0]];
      if (step.elements != out.elements)
        file.bad(sw + ".elements", std::to_string(step.elements) +
                                       " elements, but output value " +
                                       std::to_string(step.outputs[0]) + " (" +
                                       describe(out) + ") has " +
                                       std::to_string(out.elements));
      checkKernelStep(file, sw, step, fn, ctx.plan);
      if (file.optField(sj, sw, "token_rows"))
        readTokenRows(file, sj, sw, fn, step);
    }
    fn.steps.push_back(std::move(step));
  }

  const json &results = file.arrayField(doc, where, "results");
  std::set<std::pair<int, int64_t>> seen;
  for (size_t i = 0; i < results.size(); ++i) {
    std::string rw = JsonFile::at(where + ".results", i);
    const json &rj = results[i];
    Result r;
    std::string role = file.stringField(rj, rw, "role");
    r.value = valueId(file.field(rj, rw, "value"), rw + ".value", false);
    const Value &v = fn.values[r.value];
    if (ctx.inference != (role == "output"))
      file.bad(rw + ".role",
               ctx.inference
                   ? "role '" + role +
                         "' in an inference artifact, whose results are "
                         "all outputs (role 'output')"
                   : std::string("role 'output' is for inference artifacts "
                                 "(manifest kind \"inference\")"));
    if (role == "output") {
      r.role = Role::Output;
      r.name = file.stringField(rj, rw, "name");
      if (r.name.empty())
        file.bad(rw + ".name", "is empty");
      for (const Result &other : fn.results)
        if (other.name == r.name)
          file.bad(rw + ".name", "a second output named '" + r.name + "'");
    } else if (role == "loss") {
      r.role = Role::Loss;
      if (fn.lossValue >= 0)
        file.bad(rw, "a second loss result");
      if (v.elements != 1 || (v.dtype != DType::F32 && v.dtype != DType::F64))
        file.bad(rw,
                 "the loss is " + describe(v) + ", not an f32 or f64 scalar");
      fn.lossValue = r.value;
    } else if (role == "metric") {
      r.role = Role::Metric;
      r.name = file.stringField(rj, rw, "name");
      if (r.name.empty() || r.name == "loss")
        file.bad(rw + ".name", r.name.empty() ? std::string("is empty")
                                              : "'loss' is the loss's role");
      for (const Result &other : fn.results)
        if (other.role == Role::Metric && other.name == r.name)
          file.bad(rw + ".name", "a second metric named '" + r.name + "'");
      if (v.elements != 1 || (v.dtype != DType::F32 && v.dtype != DType::F64))
        file.bad(rw, "metric '" + r.name + "' is " + describe(v) +
                         ", not an f32 or f64 scalar");
    } else if (role == "param" || role == "opt_state") {
      bool param = role == "param";
      r.role = param ? Role::Param : Role::OptState;
      const std::vector<TensorDesc> &slots = param ? art.params : art.optState;
      r.index = file.intField(rj, rw, "index");
      if (r.index < 0 || r.index >= int64_t(slots.size()))
        file.bad(rw + ".index", role + " index " + std::to_string(r.index) +
                                    " is out of range (" +
                                    std::to_string(slots.size()) + ")");
      const TensorDesc &t = slots[r.index];
      if (t.dtype != v.dtype || t.bytes != v.bytes)
        file.bad(rw, "value " + std::to_string(r.value) + " (" + describe(v) +
                         ") does not fit " + role + " '" + t.name + "' (" +
                         describe(t) + ")");
      if (!seen.insert({int(r.role), r.index}).second)
        file.bad(rw, "a second result for " + role + " '" + t.name + "'");
    } else if (role == "working") {
      r.role = Role::Working;
      r.index = file.intField(rj, rw, "index");
      if (r.index < 0 || r.index >= int64_t(art.params.size()))
        file.bad(rw + ".index", "param index " + std::to_string(r.index) +
                                    " is out of range (" +
                                    std::to_string(art.params.size()) + ")");
      const TensorDesc &p = art.params[r.index];
      if (!p.working)
        file.bad(rw, "param " + std::to_string(r.index) + " '" + p.name +
                         "' has no working copy (params[" +
                         std::to_string(r.index) + "] has no 'working')");
      if (v.dtype != *p.working || v.elements != p.elements)
        file.bad(rw, "value " + std::to_string(r.value) + " (" + describe(v) +
                         ") does not fit the working copy of param '" + p.name +
                         "' (" + data::dtypeName(*p.working) + " " +
                         shapeString(p.shape) + ")");
      if (!seen.insert({int(r.role), r.index}).second)
        file.bad(rw, "a second result for the working copy of param '" +
                         p.name + "'");
    } else {
      file.bad(rw + ".role",
               "unknown role '" + role +
                   "' (expected loss, metric, param, opt_state or working; "
                   "output in an inference artifact)");
    }
    fn.results.push_back(r);
  }
  if (fn.lossValue < 0 && !ctx.inference)
    file.bad(where + ".results", "no loss result");

  analyzeDataflow(fn, [&](const std::string &msg) { file.bad(where, msg); });
}

/// The optional "working" of each params entry: the dtype of the
/// parameter's working copy, bf16 or f16, of an f32 parameter only.
void readParamWorking(const JsonFile &file, const json &list,
                      std::vector<TensorDesc> &params) {
  for (size_t i = 0; i < params.size(); ++i) {
    std::string where = JsonFile::at("params", i);
    const json *w = file.optField(list[i], where, "working");
    if (!w)
      continue;
    where += ".working";
    std::string name = file.toString(*w, where);
    DType dtype = DType::BF16;
    if (name == "bf16")
      dtype = DType::BF16;
    else if (name == "f16")
      dtype = DType::F16;
    else
      file.bad(where,
               "unknown working dtype '" + name + "' (expected bf16 or f16)");
    if (params[i].dtype != DType::F32)
      file.bad(where, "parameter '" + params[i].name + "' is " +
                          describe(params[i]) +
                          ": only f32 parameters have a working copy");
    params[i].working = dtype;
  }
}

/// The optional "init" of each opt_state entry (docs/artifact.md).
void readOptStateInit(const JsonFile &file, const json &list,
                      std::vector<TensorDesc> &slots) {
  for (size_t i = 0; i < slots.size(); ++i) {
    std::string where = JsonFile::at("opt_state", i);
    const json *init = file.optField(list[i], where, "init");
    if (!init)
      continue;
    where += ".init";
    if (!init->is_number())
      file.bad(where, "expected a number, got " + brief(*init));
    double v = init->get<double>();
    std::string why = initUnfit(v, slots[i].dtype);
    if (!why.empty())
      file.bad(where, formatNumber(v) + " " + why + ", but optimizer state '" +
                          slots[i].name + "' is " + describe(slots[i]));
    slots[i].init = v;
  }
}

} // namespace

Plan readPlanJson(const std::string &path, const Manifest &manifest,
                  const std::vector<TensorDesc> &constants,
                  const std::string &constantsFile) {
  JsonFile file(path);
  json doc = file.read();
  Plan art;
  PlanContext ctx{art, manifest.kind == Kind::Inference, constants,
                  constantsFile};
  if (!doc.is_object())
    file.bad("", "expected a JSON object, got " + brief(doc));
  int64_t version = file.intField(doc, "", "version");
  if (version != TCC_ARTIFACT_VERSION)
    file.bad("version",
             "plan version " + std::to_string(version) +
                 " is not supported: this runtime reads version " +
                 std::to_string(TCC_ARTIFACT_VERSION),
             TCC_ERROR_VERSION);
  art.params = file.tensors(doc, "", "params");
  readParamWorking(file, file.arrayField(doc, "", "params"), art.params);
  art.optState = file.tensors(doc, "", "opt_state");
  readOptStateInit(file, file.arrayField(doc, "", "opt_state"), art.optState);
  art.kernels = readKernels(file, doc);
  const json &fns = file.field(doc, "", "functions");
  if (!fns.is_object())
    file.bad("functions", "expected an object, got " + brief(fns));
  for (auto it = fns.begin(); it != fns.end(); ++it) {
    Function fn;
    fn.name = it.key();
    readFunction(file, it.value(), ctx, fn);
    art.functions.push_back(std::move(fn));
  }
  if (ctx.inference) {
    // One function: its inputs are the session's, its results the outputs.
    if (!art.function("forward"))
      file.bad("functions", "missing 'forward' (an inference artifact runs "
                            "@forward)");
    if (art.functions.size() != 1)
      file.bad("functions", "an inference artifact has one function, "
                            "'forward', not " +
                                std::to_string(art.functions.size()));
    if (!art.optState.empty())
      file.bad("opt_state", "an inference artifact has no optimizer state");
    return art;
  }
  const Function *train = art.function("train_step");
  if (!train)
    file.bad("functions", "missing 'train_step'");
  // One set of bound inputs serves every function: the same name must mean
  // the same tensor, and with accum N the leading dim is N.
  for (const Function &fn : art.functions)
    for (size_t i = 0; i < fn.inputs.size(); ++i) {
      const TensorDesc &in = fn.inputs[i];
      std::string w =
          "functions." + fn.name + ".inputs[" + std::to_string(i) + "]";
      const TensorDesc *t = nullptr;
      for (const TensorDesc &ti : train->inputs)
        if (ti.name == in.name)
          t = &ti;
      if (!t)
        file.bad(w, "input '" + in.name + "' is not an input of train_step");
      if (t->dtype != in.dtype || t->shape != in.shape)
        file.bad(w, "input '" + in.name + "' is " + describe(in) +
                        " but train_step's is " + describe(*t));
      if (manifest.accum > 1 &&
          (in.shape.empty() || in.shape[0] != manifest.accum))
        file.bad(w, "input '" + in.name + "' is " + describe(in) +
                        ", but with accum " + std::to_string(manifest.accum) +
                        " its leading dim must be the accumulation count");
    }
  return art;
}

} // namespace tcc::rt
