#include "runtime/io/safetensors.hpp"

#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <stdexcept>
#include <unistd.h>

namespace deepcee::runtime {

namespace fs = std::filesystem;

// The format is little-endian; copying host bytes as they are is only right on such hosts.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes little-endian");

namespace {

/// The reference implementation refuses headers above 100 MB; so do we, so that a corrupt
/// length cannot make us allocate the whole disk.
constexpr uint64_t max_header_bytes = 100'000'000;

template <class T>
std::vector<uint8_t> to_bytes(std::span<const T> values) {
  std::vector<uint8_t> bytes(values.size_bytes());
  if (!bytes.empty())
    std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <class T>
std::vector<T> from_bytes(const named_tensor& t, const char* dtype) {
  if (t.dtype != dtype)
    throw std::logic_error("tensor '" + t.name + "' has dtype " + t.dtype + ", not " + dtype);
  std::vector<T> values(t.data.size() / sizeof(T));
  if (!values.empty())
    std::memcpy(values.data(), t.data.data(), values.size() * sizeof(T));
  return values;
}

/// Elements of `shape`, or -1 when a dimension is negative or the product overflows.
int64_t checked_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    if (d != 0 && n > INT64_MAX / d)
      return -1;
    n *= d;
  }
  return n;
}

[[noreturn]] void fail_errno(const fs::path& path, const std::string& what) {
  fail_input(path, 0, what + ": " + std::strerror(errno));
}

void write_all(int fd, const uint8_t* data, size_t size, const fs::path& path) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fail_errno(path, "write failed");
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

/// Parses with a callback that rejects repeated keys in any object: nlohmann keeps the
/// last of duplicate keys silently, which would hide a corrupt header.
nlohmann::json parse_header(const fs::path& path, const char* begin, const char* end) {
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto callback = [&keys, &duplicate](int, nlohmann::json::parse_event_t event,
                                      nlohmann::json& parsed) {
    using event_t = nlohmann::json::parse_event_t;
    if (event == event_t::object_start)
      keys.emplace_back();
    else if (event == event_t::object_end && !keys.empty())
      keys.pop_back();
    else if (event == event_t::key && !keys.empty() &&
             !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(begin, end, callback);
  } catch (const nlohmann::json::exception& e) {
    fail_input(path, 0, std::string("invalid JSON header: ") + e.what());
  }
  if (!duplicate.empty())
    fail_input(path, 0, "duplicate key '" + duplicate + "' in header");
  return header;
}

uint64_t unsigned_value(const fs::path& path, const nlohmann::json& v, const std::string& what) {
  if (!v.is_number_unsigned())
    fail_input(path, 0, what + " must be a non-negative integer");
  return v.get<uint64_t>();
}

named_tensor read_entry(const fs::path& path, const std::string& name, const nlohmann::json& entry,
                        uint64_t data_size, uint64_t& begin) {
  const std::string where = "tensor '" + name + "'";
  if (!entry.is_object())
    fail_input(path, 0, where + ": entry is not an object");
  for (const auto& [key, value] : entry.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      fail_input(path, 0, where + ": unknown field '" + key + "'");
  if (!entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
    fail_input(path, 0, where + ": needs dtype, shape and data_offsets");

  named_tensor t;
  t.name = name;
  if (!entry["dtype"].is_string())
    fail_input(path, 0, where + ": dtype must be a string");
  t.dtype = entry["dtype"].get<std::string>();
  if (dtype_size(t.dtype) == 0)
    fail_input(path, 0, where + ": unsupported dtype '" + t.dtype + "' (F32 or I32)");

  const nlohmann::json& shape = entry["shape"];
  if (!shape.is_array())
    fail_input(path, 0, where + ": shape must be an array");
  for (const nlohmann::json& d : shape) {
    const uint64_t dim = unsigned_value(path, d, where + ": shape dimensions");
    if (dim > static_cast<uint64_t>(INT64_MAX))
      fail_input(path, 0, where + ": shape dimension too large");
    t.shape.push_back(static_cast<int64_t>(dim));
  }
  const int64_t numel = checked_numel(t.shape);
  if (numel < 0 || static_cast<uint64_t>(numel) > UINT64_MAX / dtype_size(t.dtype))
    fail_input(path, 0, where + ": shape is too large");

  const nlohmann::json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    fail_input(path, 0, where + ": data_offsets must be [begin, end]");
  begin = unsigned_value(path, offsets[0], where + ": data_offsets");
  const uint64_t end = unsigned_value(path, offsets[1], where + ": data_offsets");
  if (begin > end || end > data_size)
    fail_input(path, 0,
               where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                   "] outside the " + std::to_string(data_size) + " data bytes");
  const uint64_t expected = static_cast<uint64_t>(numel) * dtype_size(t.dtype);
  if (end - begin != expected)
    fail_input(path, 0,
               where + ": data_offsets span " + std::to_string(end - begin) +
                   " bytes but shape and dtype need " + std::to_string(expected));
  return t;
}

} // namespace

named_tensor named_tensor::f32(std::string name, std::vector<int64_t> shape,
                               std::span<const float> values) {
  return {std::move(name), "F32", std::move(shape), to_bytes(values)};
}

named_tensor named_tensor::i32(std::string name, std::vector<int64_t> shape,
                               std::span<const int32_t> values) {
  return {std::move(name), "I32", std::move(shape), to_bytes(values)};
}

int64_t named_tensor::numel() const {
  return checked_numel(shape);
}

std::vector<float> named_tensor::to_f32() const {
  return from_bytes<float>(*this, "F32");
}

std::vector<int32_t> named_tensor::to_i32() const {
  return from_bytes<int32_t>(*this, "I32");
}

const named_tensor* safetensors_file::find(const std::string& name) const {
  for (const named_tensor& t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

size_t dtype_size(const std::string& dtype) {
  if (dtype == "F32" || dtype == "I32")
    return 4;
  return 0;
}

void write_safetensors(const fs::path& path, const std::vector<named_tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // ordered_json keeps __metadata__ first and the tensors in data order, as the reference
  // writer does; readers do not depend on the order.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const named_tensor& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !names.insert(t.name).second)
      throw std::invalid_argument("write_safetensors: empty, reserved or duplicate name '" +
                                  t.name + "'");
    if (dtype_size(t.dtype) == 0)
      throw std::invalid_argument("write_safetensors: tensor '" + t.name +
                                  "' has unsupported dtype '" + t.dtype + "'");
    const int64_t numel = checked_numel(t.shape);
    if (numel < 0 || static_cast<uint64_t>(numel) * dtype_size(t.dtype) != t.data.size())
      throw std::invalid_argument("write_safetensors: tensor '" + t.name +
                                  "' has data that does not match its shape");
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  uint8_t length[8];
  const uint64_t n = json.size();
  std::memcpy(length, &n, 8);

  fs::path tmp = path;
  tmp += ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail_errno(tmp, "cannot open for writing");
  try {
    write_all(fd, length, 8, tmp);
    write_all(fd, reinterpret_cast<const uint8_t*>(json.data()), json.size(), tmp);
    for (const named_tensor& t : tensors)
      write_all(fd, t.data.data(), t.data.size(), tmp);
    if (::fsync(fd) != 0)
      fail_errno(tmp, "fsync failed");
  } catch (...) {
    ::close(fd);
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
  if (::close(fd) != 0) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    fail_errno(tmp, "close failed");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    std::error_code ignored;
    fs::remove(tmp, ignored);
    errno = saved;
    fail_errno(path, "cannot rename " + tmp.filename().string() + " into place");
  }
  // The rename is durable only once the directory entry is on disk too.
  fs::path dir = path.parent_path();
  if (dir.empty())
    dir = ".";
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

safetensors_file read_safetensors(const fs::path& path) {
  // Regular files only: a FIFO would block the reader, a device never end.
  const std::string bytes =
      read_bounded_file(path, std::numeric_limits<uint64_t>::max(), "safetensors file");
  if (bytes.size() < 8)
    fail_input(path, 0,
               "file has " + std::to_string(bytes.size()) +
                   " bytes, fewer than the 8-byte header length");
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  const uint64_t rest = bytes.size() - 8;
  if (header_size > rest || header_size > max_header_bytes)
    fail_input(path, 0,
               "header length " + std::to_string(header_size) + " exceeds the " +
                   std::to_string(rest) + " bytes after it");
  const char* json_begin = bytes.data() + 8;
  if (header_size == 0 || json_begin[0] != '{')
    fail_input(path, 0, "header does not start with '{'");
  const nlohmann::json header = parse_header(path, json_begin, json_begin + header_size);
  if (!header.is_object())
    fail_input(path, 0, "header is not a JSON object");

  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data()) + 8 + header_size;
  const uint64_t data_size = rest - header_size;
  safetensors_file file;
  std::vector<std::pair<uint64_t, named_tensor>> placed;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object())
        fail_input(path, 0, "__metadata__ must be an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string())
          fail_input(path, 0, "__metadata__ value '" + key + "' must be a string");
        file.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    uint64_t begin = 0;
    named_tensor t = read_entry(path, name, entry, data_size, begin);
    placed.emplace_back(begin, std::move(t));
  }

  // Like the reference reader: the tensors must tile the data exactly, in some order, so
  // that no byte is shared by two tensors or belongs to none.
  std::sort(placed.begin(), placed.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.name < b.second.name;
  });
  uint64_t expected_begin = 0;
  const std::string* previous = nullptr;
  for (auto& [begin, t] : placed) {
    if (begin < expected_begin)
      fail_input(path, 0, "tensors '" + *previous + "' and '" + t.name + "' overlap");
    if (begin > expected_begin)
      fail_input(path, 0,
                 "gap of " + std::to_string(begin - expected_begin) +
                     " unused data bytes before tensor '" + t.name + "'");
    const uint64_t size = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype);
    t.data.assign(data + begin, data + begin + size);
    expected_begin = begin + size;
    previous = &t.name;
  }
  if (expected_begin != data_size)
    fail_input(path, 0,
               std::to_string(data_size - expected_begin) +
                   " data bytes after the last tensor belong to no tensor");
  file.tensors.reserve(placed.size());
  for (auto& [begin, t] : placed)
    file.tensors.push_back(std::move(t));
  return file;
}

} // namespace deepcee::runtime
