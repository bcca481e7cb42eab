// Reads an object written by the emitter (codegen/emit.h) back with LLVM's object library: its
// symbols, and the model description (runtime-stub/include/tgc_model.h) found through its relocations.
// Pointer fields hold 0 in the section data; ELF RELA relocations (x86-64, aarch64) say where
// they point: a symbol, or a section plus an addend for the emitter's private constants.
#pragma once
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace tgc::test {

class EmittedObject {
 public:
  // A place in the object: a section and an offset in it.
  struct Place {
    uint64_t section;
    uint64_t offset;
    Place operator+(uint64_t n) const { return {section, offset + n}; }
  };

  explicit EmittedObject(const std::string& path) {
    auto file = llvm::object::ObjectFile::createObjectFile(path);
    if (!file) throw std::runtime_error(path + ": " + llvm::toString(file.takeError()));
    file_ = std::move(*file);
    const llvm::object::ObjectFile& obj = *file_.getBinary();
    for (const llvm::object::SymbolRef& sym : obj.symbols()) {
      std::string name = cantFail(sym.getName()).str();
      if (name.empty()) continue;
      (cantFail(sym.getFlags()) & llvm::object::SymbolRef::SF_Undefined ? undefined_ : defined_).insert(name);
    }
    for (const llvm::object::SectionRef& sec : obj.sections()) {
      contents_[sec.getIndex()] = cantFail(sec.getContents()).str();
      names_[cantFail(sec.getName()).str()] = sec.getIndex();
      auto target = cantFail(sec.getRelocatedSection());
      if (target == obj.section_end()) continue;
      for (const llvm::object::RelocationRef& r : sec.relocations()) {
        Pointer p;
        int64_t addend = cantFail(llvm::object::ELFRelocationRef(r).getAddend());
        llvm::object::symbol_iterator sym = r.getSymbol();
        p.symbol = cantFail(sym->getName()).str();
        if (!(cantFail(sym->getFlags()) & llvm::object::SymbolRef::SF_Undefined))
          p.target = Place{cantFail(sym->getSection())->getIndex(), cantFail(sym->getValue()) + uint64_t(addend)};
        pointers_[{target->getIndex(), r.getOffset()}] = p;
      }
    }
  }

  bool defines(const std::string& sym) const { return defined_.count(sym) > 0; }
  bool references(const std::string& sym) const { return undefined_.count(sym) > 0; }
  // The bytes of a section, or nullopt when the object has none of that name.
  std::optional<std::string> section(const std::string& name) const {
    auto it = names_.find(name);
    if (it == names_.end()) return std::nullopt;
    return contents_.at(it->second);
  }

  // Where the pointer stored at `at` points: a symbol's name (may be a section's) and, for one the
  // object defines, the place. Nothing for a null pointer.
  struct Pointer {
    std::string symbol;
    std::optional<Place> target;
  };
  std::optional<Pointer> pointer(Place at) const {
    auto it = pointers_.find({at.section, at.offset});
    if (it == pointers_.end()) return std::nullopt;
    return it->second;
  }
  Place points_to(Place at) const {
    std::optional<Pointer> p = pointer(at);
    if (!p || !p->target) throw std::runtime_error("no pointer into the object at offset " + std::to_string(at.offset));
    return *p->target;
  }
  template <class T>
  T read(Place at) const {
    const std::string& bytes = contents_.at(at.section);
    if (at.offset + sizeof(T) > bytes.size()) throw std::runtime_error("read past the end of a section");
    T v;
    std::memcpy(&v, bytes.data() + at.offset, sizeof(T));
    return v;
  }
  std::string string_at(Place at) const { return contents_.at(at.section).c_str() + at.offset; }
  std::string bytes_at(Place at, size_t n) const { return contents_.at(at.section).substr(at.offset, n); }

  // The model description: the struct whose backend field points at the runtime's backend table.
  Place description(const std::string& backend_symbol, size_t backend_field_offset) const {
    for (const auto& [at, p] : pointers_)
      if (p.symbol == backend_symbol) return {at.first, at.second - backend_field_offset};
    throw std::runtime_error("nothing in the object points at " + backend_symbol);
  }

 private:
  llvm::object::OwningBinary<llvm::object::ObjectFile> file_;
  std::set<std::string> defined_, undefined_;
  std::map<uint64_t, std::string> contents_;
  std::map<std::string, uint64_t> names_;
  std::map<std::pair<uint64_t, uint64_t>, Pointer> pointers_;  // (section, offset) -> target
};

}  // namespace tgc::test
