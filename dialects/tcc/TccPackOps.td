#ifndef TCC_PACK_OPS_TD
#define TCC_PACK_OPS_TD

// Pad-skipping (tcc-pack-tokens): the valid tokens of a padded [B, T] batch
// are packed into the first rows of the same [B, T, ...] buffers, so that
// token-wise library calls run over the valid rows only. Shapes do not
// change: a packed value's row r (its leading [B, T] or [B*T] dims
// flattened) holds the r-th valid token, and rows past the count are zero.

def Tcc_PackIndexOp : Tcc_Op<"pack_index", [Pure, InferTypeOpAdaptor, Tcc_LibraryCall]> {
  let callFamily = "pack";
  let summary = "where the valid tokens of a key-padding mask go when packed";
  let description = [{
    `key_mask` is an attention key mask `[B, T]`: i1 (true = a token) or a
    float bias (0 = a token; -1e4 or below, -inf included = padding; any
    other value stops the step with an error naming the position, since
    packing would change what attention computes). `rows` (i32 `[B*T]`):
    `rows[i]` is `b*T + t` of the i-th valid token in row-major order, -1
    past the number of valid tokens; `cu_seqlens` (i32 `[B+1]`): the valid
    tokens before row b, so row b's tokens are packed rows
    `[cu_seqlens[b], cu_seqlens[b+1])` and `cu_seqlens[B]` is the count.
    The count is read at run time: no padding pattern needs a recompile.
  }];
  let arguments = (ins Tcc_Tensor:$key_mask);
  let results = (outs StaticShapeTensorOf<[I32]>:$rows,
                      StaticShapeTensorOf<[I32]>:$cu_seqlens);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_PackOp : Tcc_Op<"pack", [Pure, InferTypeOpAdaptor, Tcc_LibraryCall]> {
  let callFamily = "pack";
  let summary = "a [B, T, ...] value in packed row order";
  let description = [{
    `input`'s leading dims ([B, T] or [B*T]) are its rows. Row `i` of the
    result is input row `rows[i]`, or `fill` past the count. With
    `check_fill` every padded row of `input` must already hold `fill`, else
    a run-time error names the first position that does not: the labels of
    a loss, whose padded positions must be `ignore_index` for the packed
    loss to count exactly the tokens the unpacked one counts; or (fill 0) a
    gradient that enters the packed region from a CLS token's read, zero
    at padding when the token read is a valid one.
  }];
  let arguments = (ins Tcc_Tensor:$input, StaticShapeTensorOf<[I32]>:$rows,
                       DefaultValuedAttr<F64Attr, "0.0">:$fill,
                       DefaultValuedAttr<BoolAttr, "false">:$check_fill);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_UnpackOp : Tcc_Op<"unpack", [Pure, InferTypeOpAdaptor, Tcc_LibraryCall]> {
  let callFamily = "pack";
  let summary = "a packed value back in [B, T, ...] order, zero at padding";
  let description = [{
    The inverse of `tcc.pack`: result row `rows[i]` is input row `i` for
    every valid token; padded rows are zero. tcc-pack-tokens unpacks a
    value whose unpacked value is zero at padded positions (gradients that
    flow from a loss that ignores padding), or one whose users read only
    positions `[read_begin, read_end)` of each sequence of `seq` (a CLS
    token): each of those must then be a valid token, else a run-time error
    names it. Either way the result is exact where it is read.
  }];
  let arguments = (ins Tcc_Tensor:$input, StaticShapeTensorOf<[I32]>:$rows,
                       DefaultValuedAttr<I64Attr, "0">:$seq,
                       DefaultValuedAttr<I64Attr, "0">:$read_begin,
                       DefaultValuedAttr<I64Attr, "0">:$read_end);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_SegmentIndexOp : Tcc_Op<"segment_index", [Pure, InferTypeOpAdaptor, Tcc_LibraryCall]> {
  let callFamily = "pack";
  let summary = "the documents of packed rows, from their position ids";
  let description = [{
    Packed documents (tcc-pack-documents): `position_ids` `[B, T]` (integer)
    numbers each token within its document. A document starts at every row
    start and wherever the position is 0; within a document a position is
    the previous one plus 1 (any other value stops the step with an error
    naming it). `cu_seqlens` (i32 `[B*T+1]`): the flattened `b*T + t` of
    each document's first token in order, then `B*T` in every later entry,
    so document s is tokens `[cu_seqlens[s], cu_seqlens[s+1])` (empty past
    the last) and attention over it is block-diagonal: a document never
    crosses a row and attends only to itself.
  }];
  let arguments = (ins Tcc_Tensor:$position_ids);
  let results = (outs StaticShapeTensorOf<[I32]>:$cu_seqlens);
  let assemblyFormat = Tcc_GenericFormat;
}

#endif // TCC_PACK_OPS_TD
