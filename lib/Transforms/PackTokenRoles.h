// What each op does with packed token rows (tcc-pack-tokens): which of its
// operands and results can be in packed row order, what it needs of them,
// and which results are zero at padded positions. The pass (PackTokens.cpp)
// grows and rewrites the region from these roles.
#ifndef TCC_LIB_TRANSFORMS_PACKTOKENROLES_H
#define TCC_LIB_TRANSFORMS_PACKTOKENROLES_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <functional>
#include <optional>

namespace tcc::packing {

/// A padded batch: B sequences of T positions, N = B * T token rows.
struct Geometry {
  mlir::Value keyMask; ///< the attention key mask [B, T] that says which
  int64_t b = 0, t = 0;
  int64_t n() const { return b * t; }
};

/// How a packed value lays its tokens out. Row: the leading [B, T] or
/// [B*T] dims are the token rows (both are the same memory order).
/// Head: [B, H, T, D], the layout attention reads (token (b, t) at dims 0
/// and 2), reached only through a [0, 2, 1, 3] transpose.
enum class Form { Row, Head };

/// The leading dims of `type` that are token rows ([B, T]: 2, [B*T]: 1),
/// or 0 when it has none.
unsigned rowDims(mlir::Type type, const Geometry &g);

struct Role {
  /// Operand / result index and its form, for those in packed order.
  llvm::SmallVector<std::pair<unsigned, Form>, 4> operands, results;
  /// A library call that may run over the valid rows only (tcc.token_rows).
  bool runsOverRows = false;
  /// An operand whose padded rows enter the region as `value`: a loss's
  /// labels (ignore_index, `check`ed at run time to be what the padded
  /// tokens hold), or the integer compared with `value` by a `cmp ne`
  /// (no check: whatever the padded tokens hold, the packed rows say
  /// `value`, so the comparison is false there: `zeroResult`).
  struct Fill {
    unsigned operand;
    int64_t value;
    bool check;
    bool zeroResult;
  };
  std::optional<Fill> fill;
  /// Sums over tokens: at least one of these operands must be zero at
  /// padding (else the sum would see the padded rows' values).
  llvm::SmallVector<unsigned, 2> needsZeroPadded;
  /// A weight gradient per batch ([B, F, C]): every user must sum over
  /// dim 0, since packing moves tokens between batches.
  bool usersSumOverBatch = false;
  /// Which results are zero at padded positions, packed or not, given
  /// which operands are (by operand index).
  std::function<bool(unsigned result,
                     const std::function<bool(unsigned operand)> &zero)>
      zeroPadded;
};

/// The op's role, or nullopt when it cannot run over packed rows.
std::optional<Role> roleOf(mlir::Operation *op, const Geometry &g);

} // namespace tcc::packing

#endif // TCC_LIB_TRANSFORMS_PACKTOKENROLES_H
