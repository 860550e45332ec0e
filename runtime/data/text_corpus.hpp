#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace deepcee::runtime {

/// The corpus is held in memory, train and validation text together: a file or directory
/// larger than this is refused rather than read.
constexpr uint64_t max_corpus_bytes = uint64_t{2} << 30;

enum class corpus_split { train, validation };

/// Inputs and next-byte targets of one batch, both row-major [batch * context].
struct token_batch {
  int batch = 0;
  int context = 0;
  std::vector<int32_t> tokens;
  std::vector<int32_t> targets; ///< targets[i] is the byte after tokens[i]
};

/// Where one source file went: bytes [train_begin, train_begin + train_bytes) of the train
/// text and [validation_begin, validation_begin + validation_bytes) of the validation text.
struct corpus_file {
  std::filesystem::path path;
  size_t train_begin = 0;
  size_t train_bytes = 0;
  size_t validation_begin = 0;
  size_t validation_bytes = 0;
};

/// A byte corpus held in memory, split into train and validation text.
///
/// Loading a directory walks it recursively in sorted path order. So the corpus, and thus
/// every batch, is the same on every machine. It skips what is not text. Symbolic links
/// are skipped, since Debian's fortunes has `x.u8 -> x`, which would count each file twice.
/// So are `.dat` files (strfile indexes) and any file that contains a NUL byte. Fortune
/// files are kept as they are, `%` separator lines included. The model then learns where a
/// fortune ends, so one fortune at a time can be sampled. And the loader stays
/// format-agnostic.
///
/// The split is per file: the last `val_fraction` of each file (rounded up to whole bytes,
/// then moved back to the start of that line) is validation, the rest train. Both splits
/// thus see every file, so validation loss measures the same mix of styles as training.
/// The parts are concatenated in path order.
class text_corpus {
public:
  /// `path` is a file or a directory; a relative path is relative to the current
  /// directory. Throws input_error naming the path when it does not exist, holds no
  /// usable text, or is larger than max_corpus_bytes. It also throws when a file given
  /// directly is binary or not a regular file: a FIFO would block, and a device such as
  /// /dev/zero never ends.
  static text_corpus load(const std::filesystem::path& path, double val_fraction);

  /// A corpus from two texts already in memory (tests, generated data). `source` names it
  /// in error messages.
  static text_corpus from_texts(std::string train, std::string validation,
                                std::filesystem::path source = "<memory>");

  const std::filesystem::path& source() const { return source_; }
  const std::vector<corpus_file>& files() const { return files_; }
  const std::string& text(corpus_split split) const;
  size_t size(corpus_split split) const { return text(split).size(); }

  /// Throws input_error naming the source when a split has fewer than context + 1 bytes,
  /// since a window and its shifted target would not fit. Call it once after loading to
  /// report a too-short corpus before training starts; sampling checks it too.
  void require_context(int context) const;

  /// `batch` windows of `context` bytes at offsets drawn uniformly from an RNG seeded only
  /// by (seed, step, split): a run resumed at step k sees exactly the batches that an
  /// uninterrupted run would have, whatever happened before.
  token_batch sample_batch(corpus_split split, int batch, int context, uint64_t seed,
                           uint64_t step) const;

  /// Validation batch `index` of a fixed set: the same (index, batch, context, seed) gives
  /// the same windows in every evaluation, so validation losses are comparable over time
  /// and across runs. Draws from a stream that no training step uses.
  token_batch validation_batch(uint64_t index, int batch, int context, uint64_t seed) const;

private:
  token_batch windows(corpus_split split, int batch, int context, uint64_t stream) const;

  std::filesystem::path source_;
  std::vector<corpus_file> files_;
  std::string train_;
  std::string validation_;
};

} // namespace deepcee::runtime
