#include "runtime/data/text_corpus.hpp"

#include "runtime/base/bounded_file.hpp"
#include "runtime/base/errors.hpp"
#include "runtime/base/splitmix.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <system_error>

namespace deepcee::runtime {

namespace fs = std::filesystem;

namespace {

/// Domain separators so that train steps, validation-split steps and the fixed
/// validation set never draw from the same stream.
constexpr uint64_t train_domain = 0x747261696e000000ULL;      // "train"
constexpr uint64_t validation_domain = 0x76616c6964000000ULL; // "valid"
constexpr uint64_t fixed_eval_domain = 0x6576616c00000000ULL; // "eval"

uint64_t stream_seed(uint64_t seed, uint64_t domain, uint64_t index) {
  return splitmix64(splitmix64(seed ^ domain) ^ index);
}

std::string read_file(const fs::path& path) {
  return read_bounded_file(path, max_corpus_bytes, "corpus file");
}

bool is_binary(const std::string& bytes) {
  return bytes.find('\0') != std::string::npos;
}

/// Start of the validation part: the last ceil(size * val_fraction) bytes, moved back to
/// the start of the line they begin in so that no line is split between the two sets. A
/// file with no line break before that point is cut at the byte.
size_t validation_cut(const std::string& bytes, double val_fraction) {
  const size_t size = bytes.size();
  const auto val_bytes = static_cast<size_t>(std::ceil(static_cast<double>(size) * val_fraction));
  const size_t target = size - std::min(size, val_bytes);
  if (target == 0)
    return 0;
  const size_t newline = bytes.rfind('\n', target - 1);
  return newline == std::string::npos ? target : newline + 1;
}

std::vector<fs::path> text_files_under(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
  if (ec)
    fail_input(dir, 0, "cannot list directory: " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec)
      fail_input(dir, 0, "cannot list directory: " + ec.message());
    const fs::directory_entry& entry = *it;
    if (entry.is_symlink() || !entry.is_regular_file())
      continue;
    if (entry.path().extension() == ".dat")
      continue;
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

} // namespace

text_corpus text_corpus::load(const fs::path& path, double val_fraction) {
  if (!(val_fraction > 0.0 && val_fraction < 1.0))
    fail_input(path, 0, "val_fraction must be in (0, 1), got " + std::to_string(val_fraction));
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status))
    fail_input(path, 0, "corpus path does not exist");

  text_corpus corpus;
  corpus.source_ = path;
  auto add = [&corpus, val_fraction](const fs::path& file, const std::string& bytes) {
    const size_t cut = validation_cut(bytes, val_fraction);
    corpus_file record{file, corpus.train_.size(), cut, corpus.validation_.size(),
                       bytes.size() - cut};
    corpus.train_.append(bytes, 0, cut);
    corpus.validation_.append(bytes, cut, std::string::npos);
    corpus.files_.push_back(std::move(record));
  };

  if (fs::is_directory(status)) {
    uint64_t total = 0;
    for (const fs::path& file : text_files_under(path)) {
      std::string bytes = read_file(file);
      total += bytes.size();
      if (total > max_corpus_bytes)
        fail_input(path, 0,
                   "corpus directory holds more than the " +
                       byte_size_text(static_cast<double>(max_corpus_bytes)) +
                       " deepcee keeps in memory");
      if (bytes.empty() || is_binary(bytes))
        continue;
      add(file, bytes);
    }
    if (corpus.files_.empty())
      fail_input(path, 0,
                 "directory holds no usable text files (symlinks, .dat and binary "
                 "files are skipped)");
  } else {
    std::string bytes = read_file(path);
    if (is_binary(bytes))
      fail_input(path, 0, "corpus file is binary (contains NUL bytes)");
    if (bytes.empty())
      fail_input(path, 0, "corpus file is empty");
    add(path, bytes);
  }
  return corpus;
}

text_corpus text_corpus::from_texts(std::string train, std::string validation, fs::path source) {
  text_corpus corpus;
  corpus.source_ = std::move(source);
  corpus.files_.push_back({corpus.source_, 0, train.size(), 0, validation.size()});
  corpus.train_ = std::move(train);
  corpus.validation_ = std::move(validation);
  return corpus;
}

const std::string& text_corpus::text(corpus_split split) const {
  return split == corpus_split::train ? train_ : validation_;
}

void text_corpus::require_context(int context) const {
  if (context < 1)
    throw std::invalid_argument("text_corpus: context must be >= 1");
  const auto needed = static_cast<size_t>(context) + 1;
  for (corpus_split split : {corpus_split::train, corpus_split::validation}) {
    if (size(split) < needed) {
      const char* name = split == corpus_split::train ? "train" : "validation";
      fail_input(source_, 0,
                 std::string(name) + " split has " + std::to_string(size(split)) +
                     " bytes, fewer than context + 1 = " + std::to_string(needed));
    }
  }
}

token_batch text_corpus::sample_batch(corpus_split split, int batch, int context, uint64_t seed,
                                      uint64_t step) const {
  const uint64_t domain = split == corpus_split::train ? train_domain : validation_domain;
  return windows(split, batch, context, stream_seed(seed, domain, step));
}

token_batch text_corpus::validation_batch(uint64_t index, int batch, int context,
                                          uint64_t seed) const {
  return windows(corpus_split::validation, batch, context,
                 stream_seed(seed, fixed_eval_domain, index));
}

token_batch text_corpus::windows(corpus_split split, int batch, int context,
                                 uint64_t stream) const {
  if (batch < 1)
    throw std::invalid_argument("text_corpus: batch must be >= 1");
  require_context(context);
  const std::string& bytes = text(split);
  // Offsets in [0, size - context - 1], so the last target is still inside the text.
  const uint64_t choices = bytes.size() - static_cast<uint64_t>(context);

  token_batch out;
  out.batch = batch;
  out.context = context;
  const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(context);
  out.tokens.resize(n);
  out.targets.resize(n);
  uint64_t state = stream;
  for (int row = 0; row < batch; ++row) {
    state += 0x9e3779b97f4a7c15ULL;
    const uint64_t r = splitmix64(state);
    // Multiply-shift maps 64 random bits onto [0, choices) with a bias below 2^-40 for
    // any corpus that fits in memory, and gives the same answer on every platform.
    const auto offset = static_cast<size_t>((static_cast<unsigned __int128>(r) * choices) >> 64);
    int32_t* tokens = out.tokens.data() + static_cast<size_t>(row) * context;
    int32_t* targets = out.targets.data() + static_cast<size_t>(row) * context;
    for (int i = 0; i < context; ++i) {
      tokens[i] = static_cast<unsigned char>(bytes[offset + i]);
      targets[i] = static_cast<unsigned char>(bytes[offset + i + 1]);
    }
  }
  return out;
}

} // namespace deepcee::runtime
