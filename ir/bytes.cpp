#include "ir/bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ir/error.h"

namespace tgc {

std::shared_ptr<const Bytes> Bytes::own(std::vector<uint8_t> v) {
  std::shared_ptr<Bytes> b(new Bytes);
  b->owned_ = std::move(v);
  b->data_ = b->owned_.data();
  b->size_ = b->owned_.size();
  return b;
}

std::shared_ptr<const Bytes> Bytes::map(const std::string& path, uint64_t offset, uint64_t size) {
  std::shared_ptr<Bytes> b(new Bytes);
  if (size == 0) return b;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("'" + path + "' cannot be opened: " + std::strerror(errno));
  struct stat st{};
  if (fstat(fd, &st) != 0 || uint64_t(st.st_size) < offset || uint64_t(st.st_size) - offset < size) {
    close(fd);
    throw Error("'" + path + "' is too short: " + std::to_string(size) + " bytes at offset " + std::to_string(offset) +
                " do not fit in " + std::to_string(st.st_size));
  }
  uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
  uint64_t start = offset / page * page;
  size_t length = size_t(offset - start + size);
  void* p = mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, off_t(start));
  close(fd);
  if (p == MAP_FAILED) throw Error("'" + path + "' cannot be mapped: " + std::strerror(errno));
  b->map_ = p;
  b->map_size_ = length;
  b->data_ = static_cast<const uint8_t*>(p) + (offset - start);
  b->size_ = size_t(size);
  return b;
}

Bytes::~Bytes() {
  if (map_) munmap(map_, map_size_);
}

bool Bytes::operator==(const Bytes& o) const {
  return size_ == o.size_ && (size_ == 0 || std::memcmp(data_, o.data_, size_) == 0);
}

}  // namespace tgc
