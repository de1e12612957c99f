// Tensors stored outside the .onnx file (ONNX's external data: `location`,
// `offset`, `length` key/value pairs). torch.onnx.export's dynamo-based
// exporter writes every initializer to MODEL.onnx.data by default, and models
// over protobuf's 2 GiB limit must. Each one is read into raw_data before any
// check or ONNX library call, so the rest of the importer sees an ordinary
// model. The location is a relative path inside the model's folder (ONNX's
// rule): absolute paths, ".." and links that leave the folder are refused.
#include "Importer.h"

#include "tcc/Import/OnnxTensor.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;

namespace tcc::onnx_import {
namespace {

struct ExternalReader {
  GraphState &graph;
  std::string folder;     // the model's folder, real path
  llvm::StringMap<int> fds; // by location
  ~ExternalReader() {
    for (auto &e : fds)
      ::close(e.second);
  }

  LogicalResult error(const std::string &where, const onnx::TensorProto &t,
                      const std::string &why) {
    return graph.fail(ImportFailure::Invalid,
                      where + "tensor '" + printable(t.name()) +
                          "': external data " + why);
  }

  FailureOr<int> open(const std::string &where, const onnx::TensorProto &t,
                      const std::string &location) {
    if (auto it = fds.find(location); it != fds.end())
      return it->second;
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(location).split(parts, '/');
    if (location.empty() || llvm::sys::path::is_absolute(location) ||
        llvm::is_contained(parts, ".."))
      return error(where, t,
                   "location '" + printable(location) +
                       "' is not a relative path inside the model's folder");
    std::string path = folder + "/" + location;
    llvm::SmallString<256> real;
    if (std::error_code ec = llvm::sys::fs::real_path(path, real))
      return error(where, t,
                   "file '" + printable(location) + "': " + ec.message());
    if (!llvm::StringRef(real).starts_with(folder + "/"))
      return error(where, t,
                   "file '" + printable(location) +
                       "' is a link that leaves the model's folder");
    int fd = ::open(real.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      std::string why = fd < 0 ? std::strerror(errno) : "not a regular file";
      if (fd >= 0)
        ::close(fd);
      return error(where, t, "file '" + printable(location) + "': " + why);
    }
    fds[location] = fd;
    return fd;
  }

  LogicalResult load(onnx::TensorProto &t, const std::string &where) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL)
      return success();
    std::string location;
    uint64_t offset = 0, length = 0;
    bool hasLength = false;
    for (const onnx::StringStringEntryProto &kv : t.external_data()) {
      auto number = [&](uint64_t &out) {
        return !llvm::StringRef(kv.value()).getAsInteger(10, out);
      };
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset" ? !number(offset)
               : kv.key() == "length" ? !(hasLength = number(length))
                                      : false)
        return error(where, t,
                     kv.key() + " '" + printable(kv.value()) +
                         "' is not a byte count");
    }
    auto fd = open(where, t, location);
    if (failed(fd))
      return failure();
    struct stat st;
    ::fstat(*fd, &st);
    uint64_t size = uint64_t(st.st_size);
    if (!hasLength)
      length = offset <= size ? size - offset : 0;
    if (offset > size || length > size - offset)
      return error(where, t,
                   "bytes [" + std::to_string(offset) + ", " +
                       std::to_string(offset + length) + ") run past the end of '" +
                       printable(location) + "' (" + std::to_string(size) +
                       " bytes)");
    std::string *raw = t.mutable_raw_data();
    raw->resize(length);
    for (uint64_t done = 0; done < length;) {
      ssize_t n = ::pread(*fd, raw->data() + done, length - done,
                          off_t(offset + done));
      if (n <= 0)
        return error(where, t,
                     "file '" + printable(location) + "': read failed: " +
                         (n < 0 ? std::strerror(errno) : "unexpected end"));
      done += uint64_t(n);
    }
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
    return success();
  }

  LogicalResult loadGraph(onnx::GraphProto &g) {
    for (onnx::TensorProto &t : *g.mutable_initializer())
      if (failed(load(t, "initializer ")))
        return failure();
    for (onnx::SparseTensorProto &t : *g.mutable_sparse_initializer())
      if (failed(load(*t.mutable_values(), "sparse initializer ")) ||
          failed(load(*t.mutable_indices(), "sparse initializer ")))
        return failure();
    for (int i = 0; i < g.node_size(); ++i) {
      onnx::NodeProto &node = *g.mutable_node(i);
      for (onnx::AttributeProto &a : *node.mutable_attribute()) {
        std::string where = printable(describeNode(node, i)) +
                            ": attribute '" + printable(a.name()) + "': ";
        if (a.has_t() && failed(load(*a.mutable_t(), where)))
          return failure();
        for (onnx::TensorProto &t : *a.mutable_tensors())
          if (failed(load(t, where)))
            return failure();
        if (a.has_g() && failed(loadGraph(*a.mutable_g())))
          return failure();
        for (onnx::GraphProto &sub : *a.mutable_graphs())
          if (failed(loadGraph(sub)))
            return failure();
      }
    }
    return success();
  }
};

} // namespace

LogicalResult loadExternalData(GraphState &graph, onnx::ModelProto &model) {
  llvm::SmallString<256> folder(graph.path);
  llvm::sys::path::remove_filename(folder);
  if (folder.empty())
    folder = ".";
  llvm::SmallString<256> real;
  if (std::error_code ec = llvm::sys::fs::real_path(folder, real))
    return graph.fail(ImportFailure::Invalid,
                      "cannot resolve the model's folder: " + ec.message());
  ExternalReader reader{graph, std::string(real), {}};
  return reader.loadGraph(*model.mutable_graph());
}

} // namespace tcc::onnx_import
