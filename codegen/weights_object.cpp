#include "codegen/weights_object.h"

#include <llvm/BinaryFormat/ELF.h>

#include <cstring>
#include <fstream>

#include "ir/error.h"

namespace tgc {
namespace {
namespace elf = llvm::ELF;

constexpr int64_t kAlign = 64;

void pad_to(std::ofstream& out, int64_t& at, int64_t align) {
  static const char zeros[kAlign] = {};
  int64_t pad = (align - at % align) % align;
  out.write(zeros, pad);
  at += pad;
}

// Writes the blob at the stream's current position `at` (a multiple of kAlign).
void stream_weights(const Graph& g, const WeightLayout& w, std::ofstream& out, int64_t& at) {
  int64_t start = at;
  for (int64_t id : w.ids) {
    pad_to(out, at, kAlign);
    const Bytes& b = *g.buffer(id).data;
    out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    at += int64_t(b.size());
  }
  check(at - start == w.bytes, "internal error: weights do not match their layout");
}

template <class T>
void put(std::ofstream& out, int64_t& at, const T& v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof v);
  at += int64_t(sizeof v);
}

void finish(std::ofstream& out, const std::string& path) {
  if (!out.flush()) throw Error(path + ": write failed (disk full?)");
}
}  // namespace

WeightLayout layout_weights(const Graph& g, const std::vector<int64_t>& buffers) {
  WeightLayout w;
  for (int64_t id : buffers) {
    const BufferInfo& b = g.buffer(id);
    if (b.kind != BufferKind::Weight) continue;
    check(b.data != nullptr, "weight '" + b.name + "' has no data");
    w.bytes = (w.bytes + kAlign - 1) / kAlign * kAlign;
    w.ids.push_back(id);
    w.offset[id] = w.bytes;
    w.bytes += int64_t(b.data->size());
  }
  return w;
}

void write_weights_file(const Graph& g, const WeightLayout& w, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(path + ": cannot write");
  int64_t at = 0;
  stream_weights(g, w, out, at);
  finish(out, path);
}

void write_weights_object(const Graph& g, const WeightLayout& w, const std::string& arch, const std::string& symbol,
                          const std::string& path) {
  bool x86 = arch == "x86_64";
  check(x86 || arch == "aarch64", "weights object: no ELF machine for '" + arch + "'");
  // Section names and the symbol's name, each NUL-terminated, after a leading NUL.
  const std::string section = x86 ? ".lrodata.tgc_weights" : ".rodata.tgc_weights";
  std::string shstrtab =
      std::string(1, '\0') + section + '\0' + ".symtab" + '\0' + ".strtab" + '\0' + ".shstrtab" + '\0';
  uint32_t name_section = 1, name_symtab = uint32_t(name_section + section.size() + 1), name_strtab = name_symtab + 8,
           name_shstrtab = name_strtab + 8;
  std::string strtab = std::string(1, '\0') + symbol + '\0';

  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(path + ": cannot write");
  int64_t at = 0;
  // Layout: header, blob (64-aligned), symbol table, string tables, section headers.
  int64_t blob_at = kAlign, symtab_at = (blob_at + w.bytes + 7) / 8 * 8;
  int64_t strtab_at = symtab_at + 2 * int64_t(sizeof(elf::Elf64_Sym)), shstrtab_at = strtab_at + int64_t(strtab.size());
  int64_t shdr_at = (shstrtab_at + int64_t(shstrtab.size()) + 7) / 8 * 8;

  elf::Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident,
              "\x7f"
              "ELF",
              4);
  eh.e_ident[elf::EI_CLASS] = elf::ELFCLASS64;
  eh.e_ident[elf::EI_DATA] = elf::ELFDATA2LSB;
  eh.e_ident[elf::EI_VERSION] = elf::EV_CURRENT;
  eh.e_type = elf::ET_REL;
  eh.e_machine = x86 ? elf::EM_X86_64 : elf::EM_AARCH64;
  eh.e_version = elf::EV_CURRENT;
  eh.e_shoff = uint64_t(shdr_at);
  eh.e_ehsize = sizeof(elf::Elf64_Ehdr);
  eh.e_shentsize = sizeof(elf::Elf64_Shdr);
  eh.e_shnum = 5;
  eh.e_shstrndx = 4;
  put(out, at, eh);
  pad_to(out, at, kAlign);
  stream_weights(g, w, out, at);
  pad_to(out, at, 8);

  elf::Elf64_Sym null_sym{}, sym{};
  sym.st_name = 1;
  sym.setBindingAndType(elf::STB_GLOBAL, elf::STT_OBJECT);
  sym.st_other = elf::STV_HIDDEN;  // never exported: two models in one process keep their own
  sym.st_shndx = 1;
  sym.st_size = uint64_t(w.bytes);
  put(out, at, null_sym);
  put(out, at, sym);
  out.write(strtab.data(), std::streamsize(strtab.size()));
  out.write(shstrtab.data(), std::streamsize(shstrtab.size()));
  at += int64_t(strtab.size() + shstrtab.size());
  pad_to(out, at, 8);

  auto header = [&](uint32_t name, uint32_t type, uint64_t flags, int64_t offset, int64_t size, uint32_t link,
                    uint32_t info, uint64_t align, uint64_t entsize) {
    elf::Elf64_Shdr sh{};
    sh.sh_name = name, sh.sh_type = type, sh.sh_flags = flags, sh.sh_offset = uint64_t(offset),
    sh.sh_size = uint64_t(size);
    sh.sh_link = link, sh.sh_info = info, sh.sh_addralign = align, sh.sh_entsize = entsize;
    put(out, at, sh);
  };
  header(0, elf::SHT_NULL, 0, 0, 0, 0, 0, 0, 0);
  // x86-64: a large-data section, placed apart from code so that a multi-GB blob cannot push
  // other data out of 32-bit reach.
  header(name_section, elf::SHT_PROGBITS, elf::SHF_ALLOC | (x86 ? elf::SHF_X86_64_LARGE : 0), blob_at, w.bytes, 0, 0,
         kAlign, 0);
  header(name_symtab, elf::SHT_SYMTAB, 0, symtab_at, 2 * int64_t(sizeof(elf::Elf64_Sym)), 3, 1, 8,
         sizeof(elf::Elf64_Sym));
  header(name_strtab, elf::SHT_STRTAB, 0, strtab_at, int64_t(strtab.size()), 0, 0, 1, 0);
  header(name_shstrtab, elf::SHT_STRTAB, 0, shstrtab_at, int64_t(shstrtab.size()), 0, 0, 1, 0);
  finish(out, path);
}

}  // namespace tgc
