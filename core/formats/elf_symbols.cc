#include "hetrt/formats/elf_symbols.h"

#include <elf.h>

#include <cstring>

namespace hetrt {
namespace {

template <typename T>
bool ReadAt(std::span<const uint8_t> file, uint64_t offset, T* out) {
  if (offset > file.size() || file.size() - offset < sizeof(T)) return false;
  std::memcpy(out, file.data() + offset, sizeof(T));
  return true;
}

}  // namespace

Result<std::vector<ElfSymbol>> ReadElfDynamicSymbols(std::span<const uint8_t> file, const std::string& source) {
  auto bad = [&](const std::string& why) { return DataLoss(source + ": not a usable ELF64 file: " + why); };
  Elf64_Ehdr eh;
  if (!ReadAt(file, 0, &eh)) return bad("truncated header");
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return bad("bad magic");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return bad("not 64-bit");
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) return bad("not little-endian");
  if (eh.e_shentsize != sizeof(Elf64_Shdr)) return bad("unexpected section header size");
  std::vector<ElfSymbol> symbols;
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!ReadAt(file, eh.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), &sh))
      return bad("section header " + std::to_string(i) + " out of range");
    if (sh.sh_type != SHT_DYNSYM) continue;
    Elf64_Shdr strtab;
    if (!ReadAt(file, eh.e_shoff + uint64_t{sh.sh_link} * sizeof(Elf64_Shdr), &strtab))
      return bad("dynsym string table header out of range");
    if (strtab.sh_offset > file.size() || strtab.sh_size > file.size() - strtab.sh_offset)
      return bad("dynsym string table out of range");
    if (sh.sh_entsize != sizeof(Elf64_Sym)) return bad("unexpected symbol size");
    const uint64_t count = sh.sh_size / sizeof(Elf64_Sym);
    for (uint64_t k = 0; k < count; ++k) {
      Elf64_Sym sym;
      if (!ReadAt(file, sh.sh_offset + k * sizeof(Elf64_Sym), &sym))
        return bad("symbol " + std::to_string(k) + " out of range");
      if (sym.st_name >= strtab.sh_size) continue;
      const char* begin = reinterpret_cast<const char*>(file.data() + strtab.sh_offset + sym.st_name);
      const size_t max_len = strtab.sh_size - sym.st_name;
      ElfSymbol s;
      s.name.assign(begin, strnlen(begin, max_len));
      if (s.name.empty()) continue;
      s.is_function = ELF64_ST_TYPE(sym.st_info) == STT_FUNC;
      s.is_defined = sym.st_shndx != SHN_UNDEF;
      s.size = sym.st_size;
      symbols.push_back(std::move(s));
    }
  }
  return symbols;
}

}  // namespace hetrt
