//===- calls.h - checking one library call of a plan ------------*- C++ -*-===//
//
// What every op's check (plan/calls.cpp, named by library_ops.inc) sees: the
// step with its operands and results by position and its attributes already
// read with their defaults, and the rules it states them with. A rule that
// fails reports one line through `bad`, which does not return.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_PLAN_CALLS_H
#define TCC_RUNTIME_PLAN_CALLS_H

#include "kernels/attention_layout.h"
#include "kernels/window.h"
#include "plan/plan.h"

#include <functional>
#include <string>

namespace tcc::rt {

class CallCheck {
public:
  CallCheck(Step &step, const Function &fn,
            const std::function<void(const std::string &)> &bad)
      : step(step), fn(fn), badFn(bad), schema(opSchema(step.op)) {}

  Step &step;
  const Function &fn;

  /// Reports `msg` (never returns).
  [[noreturn]] void bad(const std::string &msg);

  /// Operand / result `i`; null when absent.
  const Value *in(size_t i) const;
  const Value *out(size_t i) const;
  /// Their names in the op's schema ("result_grad").
  const std::string &inName(size_t i) const;
  const std::string &outName(size_t i) const;

  /// `attrs.axis` checked against `rank` and made non-negative.
  int64_t axis(size_t rank);

  // Rules; `name` is the operand's or result's name for the message.
  const Value &need(const Value *v, const std::string &name);
  void wantFloat(const Value &v, const std::string &name);
  void wantInt(const Value &v, const std::string &name);
  void wantScalar(const Value &v, const std::string &name, data::DType dtype);
  void wantRank(const Value &v, const std::string &name, size_t rank);
  void wantLike(const Value &v, const std::string &name, data::DType dtype,
                const std::vector<int64_t> &shape);
  void wantLike(const Value &v, const std::string &name, const Value &model,
                const std::string &modelName);

private:
  const std::function<void(const std::string &)> &badFn;
  const OpSchema &schema;
};

/// "f32 [2, 3]".
std::string describe(const Value &v);

/// The numpy broadcast of two shapes; false when they do not match.
bool broadcastShapes(const std::vector<int64_t> &a,
                     const std::vector<int64_t> &b, std::vector<int64_t> &out);

/// The product of shape[begin, end).
int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end);

/// Matmul batch broadcasting, for every backend: per output batch index,
/// the index of the operand matrix it reads (numpy broadcasting of the
/// leading dims `operand` against `out`).
std::vector<int64_t> batchMap(const std::vector<int64_t> &operand,
                              const std::vector<int64_t> &out);

/// The stride (in matrices) that reproduces `map` (0 or 1), or -1.
int64_t uniformStride(const std::vector<int64_t> &map);

/// The sizes of a checked conv, max_pool or avg_pool call or gradient, for
/// the backends' kernels.
kernels::WindowShape windowShape(const Function &fn, const Step &step);

/// A checked attention, attention_grad or attention_qkv_grad call as the
/// backends' kernels take it: the dims, the strides of its tensors and, in
/// token rows, the element offsets of the query, key and value (their first
/// columns) to add to their pointers, and likewise of the query, key and
/// value gradients in the outputs (attention_qkv_grad writes all three
/// into output 0 at the operands' columns; attention_grad into outputs 0,
/// 1 and 2).
struct AttentionCall {
  int64_t batch = 0, heads = 0, tq = 0, tk = 0, d = 0, dv = 0;
  bool tokenRows = false;
  kernels::AttentionLayout layout;
  int64_t offset[3] = {0, 0, 0};
  /// The step's input index of the query, key, value, result gradient (the
  /// backward's) and key mask.
  size_t query = 0, key = 1, value = 2, resultGrad = 3, keyMask = 3;
  /// The output index of the query, key and value gradient and their
  /// element offsets there.
  size_t gradOutput[3] = {0, 1, 2};
  int64_t gradOffset[3] = {0, 0, 0};
};
AttentionCall attentionCall(const Function &fn, const Step &step);

} // namespace tcc::rt

#endif // TCC_RUNTIME_PLAN_CALLS_H
