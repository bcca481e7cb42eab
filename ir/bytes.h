// Immutable bytes that own their storage: a vector, or a read-only mapping of part of a file
// (weights in a model's external data, later GGUF tensors). Weights are held as Bytes so that a
// large model is never copied into memory whole: the compiler maps it, and the emitter streams it
// into the artifact.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tgc {

class Bytes {
 public:
  static std::shared_ptr<const Bytes> own(std::vector<uint8_t> v);
  // `size` bytes of `path` from `offset`, mapped read-only. Throws tgc::Error naming the file.
  static std::shared_ptr<const Bytes> map(const std::string& path, uint64_t offset, uint64_t size);

  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;
  ~Bytes();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const uint8_t* begin() const { return data_; }
  const uint8_t* end() const { return data_ + size_; }
  bool operator==(const Bytes& o) const;
  std::vector<uint8_t> to_vector() const { return {begin(), end()}; }

 private:
  Bytes() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::vector<uint8_t> owned_;
  void* map_ = nullptr;  // the whole mapping (page-aligned start), when mapped
  size_t map_size_ = 0;
};

}  // namespace tgc
