// The training and evaluation data feeds of the loop (feed.h).
#include "run/feed.h"

#include <algorithm>
#include <filesystem>

namespace tcc::run {

namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Whether `name` matches `pattern` of literal characters, `*` (any run)
/// and `?` (any one character).
bool wildcardMatch(const char *pattern, const char *name) {
  if (*pattern == '*')
    return wildcardMatch(pattern + 1, name) ||
           (*name && wildcardMatch(pattern, name + 1));
  if (!*pattern)
    return !*name;
  return *name && (*pattern == '?' || *pattern == *name) &&
         wildcardMatch(pattern + 1, name + 1);
}

/// The token files `path` names: itself, or when its file name holds `*`
/// or `?` the matching files of its directory in name order (the shards of
/// nanoGPT's and llm.c's data scripts sort in their order).
std::vector<std::string> tokenFiles(const std::string &path) {
  std::filesystem::path p(path);
  std::string pattern = p.filename().string();
  if (pattern.find_first_of("*?") == std::string::npos)
    return {path};
  std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : ".";
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.is_regular_file() &&
        wildcardMatch(pattern.c_str(),
                      entry.path().filename().string().c_str()))
      files.push_back((p.has_parent_path()
                           ? p.parent_path() / entry.path().filename()
                           : entry.path().filename())
                          .string());
  if (ec)
    throw data::Error(path + ": cannot list " + dir.string() + ": " +
                      ec.message());
  if (files.empty())
    throw data::Error(path + ": no file matches");
  std::sort(files.begin(), files.end());
  return files;
}

/// The batch input of packed documents' position ids.
constexpr const char *kPositionIds = "position_ids";

} // namespace

/// Opens `path` for `engine`'s batch inputs: a .bin token file (or a
/// pattern of several) needs two int64 [B, T] inputs, one of them the
/// loss's target, and packing documents (`packEot` >= 0, --pack-documents)
/// a third, position_ids; an artifact with position_ids takes a token file
/// only packed. With `ranks` > 1 the feed reads global batches of `ranks`
/// times the rows and hands out rank `rank`'s block of them.
void openFeed(Feed &feed, const std::string &path, const Engine &engine,
              int64_t packEot, int rank, int ranks) {
  std::vector<data::InputSpec> specs = engine.batchSpecs();
  for (data::InputSpec &s : specs)
    s.shape[0] *= ranks;
  feed.rank = rank;
  feed.ranks = ranks;
  const data::InputSpec *ids = nullptr;
  for (const data::InputSpec &s : specs)
    if (s.name == kPositionIds)
      ids = &s;
  bool pack = packEot >= 0;
  if (pack && !ids)
    throw data::Error("--pack-documents: this artifact has no 'position_ids' "
                      "batch input; compile the model with `tcc compile "
                      "--pack-documents`");
  if (!endsWith(path, ".bin")) {
    if (pack)
      throw data::Error(path + ": --pack-documents packs the documents of a "
                               "uint16 token file: it needs a .bin file");
    feed.arrays.emplace(data::Batcher::open(path, specs));
    return;
  }
  if (ids && !pack)
    throw data::Error(path + ": the artifact's batch inputs include "
                             "'position_ids' (packed documents): pass "
                             "--pack-documents EOT_ID to pack the token "
                             "file's documents, EOT_ID the token ending each");
  std::string target = engine.tokenTarget();
  const data::InputSpec *x = nullptr, *y = nullptr;
  for (const data::InputSpec &s : specs)
    if (&s != ids)
      (s.name == target ? y : x) = &s;
  auto isTokens = [&](const data::InputSpec *s) {
    return s && s->shape == x->shape && s->dtype == data::DType::I64;
  };
  if (specs.size() != (pack ? 3u : 2u) || !x || !y ||
      (x->shape.size() != 2 && x->shape.size() != 3) || !isTokens(x) ||
      !isTokens(y) || (pack && !isTokens(ids)))
    throw data::Error(path +
                      (pack ? ": a token file with --pack-documents feeds "
                              "models with exactly three int64 [B, T] batch "
                              "inputs, the tokens, the loss's targets and "
                              "position_ids"
                            : ": a token file feeds models with exactly two "
                              "int64 [B, T] batch inputs ([N, B, T] under "
                              "--accum N), the tokens and the loss's targets") +
                      "; this model's inputs do not fit");
  // --accum N: the step's N micro-batches are N*B consecutive rows.
  int64_t rows = x->shape[0], seqLen = x->shape.back();
  if (x->shape.size() == 3) {
    rows *= x->shape[1];
    feed.tokenShape = x->shape;
  }
  feed.tokens.emplace(tokenFiles(path), rows, seqLen, x->name, y->name);
  if (pack)
    feed.tokens->packDocuments(uint16_t(packEot), engine.labelIgnoreIndex(),
                               ids->name);
}


/// Elements of the first integer input of rank >= 2 (tokens per step), or 0.
int64_t tokensPerStep(const std::vector<data::InputSpec> &specs) {
  for (const data::InputSpec &s : specs)
    if ((s.dtype == data::DType::I64 || s.dtype == data::DType::I32) &&
        s.shape.size() >= 2) {
      int64_t n = 1;
      for (int64_t d : s.shape)
        n *= d;
      return n;
    }
  return 0;
}

} // namespace tcc::run
