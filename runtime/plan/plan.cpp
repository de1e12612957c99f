//===- plan.cpp - names and small helpers of the plan schema --------------===//

#include "plan/plan.h"

#include "data/half.h"
#include "data/sha256.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

namespace tcc::rt {

using data::DType;

void fail(tcc_status status, const std::string &message) {
  throw Error(status, message);
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string groupedDigits(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::ifstream openInput(const std::string &path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    fail(TCC_ERROR_IO, path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(TCC_ERROR_IO, path + ": cannot open: " + std::strerror(errno));
  return in;
}

std::string formatNumber(double v) {
  char buf[40];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

const char *storageName(Storage storage) {
  switch (storage) {
  case Storage::Arena:
    return "arena";
  case Storage::Param:
    return "param";
  case Storage::OptState:
    return "opt_state";
  case Storage::Step:
    return "step";
  case Storage::Input:
    return "input";
  case Storage::Constant:
    return "constant";
  case Storage::Working:
    return "working";
  }
  return "?";
}

const char *collectiveName(CollectiveOp op) {
  switch (op) {
  case CollectiveOp::AllReduce:
    return "all_reduce";
  case CollectiveOp::ReduceScatter:
    return "reduce_scatter";
  case CollectiveOp::AllGather:
    return "all_gather";
  }
  return "?";
}

const char *reductionName(Reduction reduction) {
  return reduction == Reduction::Mean ? "mean" : "sum";
}

const char *roleName(Role role) {
  switch (role) {
  case Role::Loss:
    return "loss";
  case Role::Param:
    return "param";
  case Role::OptState:
    return "opt_state";
  case Role::Output:
    return "output";
  case Role::Working:
    return "working";
  case Role::Metric:
    return "metric";
  }
  return "?";
}

TensorDesc TensorDesc::make(std::string name, DType dtype,
                            std::vector<int64_t> shape) {
  TensorDesc t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  for (int64_t d : t.shape)
    t.elements *= d;
  t.bytes = t.elements * int64_t(data::dtypeSize(dtype));
  return t;
}

Value Value::make(DType dtype, std::vector<int64_t> shape) {
  Value v;
  v.dtype = dtype;
  v.shape = std::move(shape);
  for (int64_t d : v.shape)
    v.elements *= d;
  v.bytes = v.elements * int64_t(data::dtypeSize(dtype));
  return v;
}

const Function *Plan::function(const std::string &name) const {
  for (const Function &fn : functions)
    if (fn.name == name)
      return &fn;
  return nullptr;
}

const KernelSignature *Plan::kernel(const std::string &symbol) const {
  for (const KernelSignature &k : kernels)
    if (k.symbol == symbol)
      return &k;
  return nullptr;
}

std::vector<KernelSignature> kernelTable(const Plan &plan) {
  std::vector<KernelSignature> table;
  // Per entry and input: whether every call had it the size of its output.
  std::vector<std::vector<bool>> elementwise;
  for (const Function &fn : plan.functions)
    for (const Step &step : fn.steps) {
      if (step.kind != Step::Kernel)
        continue;
      KernelSignature sig;
      sig.symbol = step.symbol;
      const Value &out = fn.values[step.outputs.at(0)];
      sig.output = {out.dtype, out.elements};
      for (size_t o = 1; o < step.outputs.size(); ++o)
        sig.stores.push_back({fn.values[step.outputs[o]].dtype,
                              fn.values[step.outputs[o]].elements});
      std::vector<bool> same;
      for (int64_t id : step.inputs) {
        sig.inputs.push_back({fn.values[id].dtype, fn.values[id].elements});
        same.push_back(fn.values[id].elements == out.elements);
      }
      auto it = std::find_if(
          table.begin(), table.end(),
          [&](const KernelSignature &k) { return k.symbol == step.symbol; });
      if (it == table.end()) {
        table.push_back(std::move(sig));
        elementwise.push_back(std::move(same));
        continue;
      }
      std::vector<bool> &was = elementwise[size_t(it - table.begin())];
      bool ok = it->inputs.size() == sig.inputs.size() &&
                it->output.dtype == sig.output.dtype &&
                it->stores.size() == sig.stores.size();
      // A store of an elementwise kernel (a sibling) has its output's size,
      // which shared kernel text need not fix.
      for (size_t o = 0; ok && o < sig.stores.size(); ++o) {
        ok = it->stores[o].dtype == sig.stores[o].dtype;
        if (it->stores[o].elements != sig.stores[o].elements)
          it->stores[o].elements = kOutputElements;
      }
      for (size_t i = 0; ok && i < sig.inputs.size(); ++i) {
        ok = it->inputs[i].dtype == sig.inputs[i].dtype;
        it->inputs[i].elements =
            std::min(it->inputs[i].elements, sig.inputs[i].elements);
        was[i] = was[i] && same[i];
      }
      if (!ok)
        throw std::logic_error("kernel '" + step.symbol +
                               "' is shared by steps of different buffers");
      if (it->output.elements != sig.output.elements)
        it->output.elements = kOutputElements;
    }
  // Shared over several output sizes, an input always the output's size is
  // elementwise: it must be the calling step's size, not the smallest's.
  for (size_t k = 0; k < table.size(); ++k)
    if (table[k].output.elements == kOutputElements)
      for (size_t i = 0; i < table[k].inputs.size(); ++i)
        if (elementwise[k][i])
          table[k].inputs[i].elements = kOutputElements;
  return table;
}

std::map<std::string, FileIntegrity> fileIntegrity(const std::string &dir,
                                                   const Manifest &manifest) {
  std::map<std::string, FileIntegrity> out;
  for (const auto &[key, rel] : manifest.files) {
    std::string path = (std::filesystem::path(dir) / rel).string();
    try {
      data::FileDigest d = data::digestFile(path);
      out[rel] = {d.bytes, d.sha256};
    } catch (const std::runtime_error &e) {
      fail(TCC_ERROR_IO, e.what());
    }
  }
  return out;
}

void checkIntegrity(const std::string &dir, const Manifest &manifest) {
  for (const auto &[key, rel] : manifest.files) {
    std::string path = (std::filesystem::path(dir) / rel).string();
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      continue;
    auto record = manifest.integrity.find(rel);
    if (record == manifest.integrity.end())
      fail(TCC_ERROR_FORMAT, path + ": no size and SHA-256 for it in the "
                                    "manifest's integrity (files." +
                                 key + ")");
    const FileIntegrity &want = record->second;
    uint64_t size = std::filesystem::file_size(path, ec);
    if (!ec && size != want.bytes)
      fail(TCC_ERROR_FORMAT, path + ": damaged: " + std::to_string(size) +
                                 " bytes, the manifest records " +
                                 std::to_string(want.bytes));
    data::FileDigest got;
    try {
      got = data::digestFile(path);
    } catch (const std::runtime_error &e) {
      fail(TCC_ERROR_IO, e.what());
    }
    if (got.bytes != want.bytes || got.sha256 != want.sha256)
      fail(TCC_ERROR_FORMAT, path + ": damaged: its SHA-256 is " + got.sha256 +
                                 ", the manifest records " + want.sha256);
  }
}

std::string initUnfit(double v, DType dtype) {
  if (!std::isfinite(v))
    return "is not finite";
  switch (dtype) {
  case DType::F64:
    return "";
  case DType::F32:
  case DType::BF16:
  case DType::F16: {
    if (std::fabs(v) > double(std::numeric_limits<float>::max()))
      return "is beyond the range of " + std::string(data::dtypeName(dtype));
    float f = static_cast<float>(v);
    if (dtype == DType::BF16 && !std::isfinite(data::roundToBf16(f)))
      return "is beyond the range of bf16";
    if (dtype == DType::F16 && !std::isfinite(data::roundToF16(f)))
      return "is beyond the range of f16 (largest finite 65504)";
    return "";
  }
  case DType::I32:
  case DType::I64: {
    if (v != std::trunc(v))
      return "is not an integer";
    bool i32 = dtype == DType::I32;
    double lo = i32 ? -2147483648.0 : -9223372036854775808.0;
    double hi = i32 ? 2147483647.0 : 9223372036854775808.0; // i64: exclusive
    if (v < lo || (i32 ? v > hi : v >= hi))
      return "is beyond the range of " + std::string(data::dtypeName(dtype));
    return "";
  }
  case DType::Bool:
    return v == 0 || v == 1 ? "" : "is not 0 or 1";
  default:
    return std::string("cannot initialise a ") + data::dtypeName(dtype) +
           " tensor";
  }
}

tcc_dtype apiDType(DType t) {
  switch (t) {
  case DType::F64:
    return TCC_F64;
  case DType::I32:
    return TCC_I32;
  case DType::I64:
    return TCC_I64;
  case DType::Bool:
    return TCC_BOOL;
  case DType::BF16:
    return TCC_BF16;
  case DType::F16:
    return TCC_F16;
  default:
    return TCC_F32;
  }
}

DType fromApiDType(tcc_dtype t) {
  switch (t) {
  case TCC_F64:
    return DType::F64;
  case TCC_I32:
    return DType::I32;
  case TCC_I64:
    return DType::I64;
  case TCC_BOOL:
    return DType::Bool;
  case TCC_BF16:
    return DType::BF16;
  case TCC_F16:
    return DType::F16;
  default:
    return DType::F32;
  }
}

} // namespace tcc::rt
