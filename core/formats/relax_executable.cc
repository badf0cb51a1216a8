#include "hetrt/formats/relax_executable.h"

#include <cstring>
#include <unordered_set>

#include "hetrt/base/dtype.h"
#include "hetrt/formats/params.h"

namespace hetrt {
namespace {

// Smallest encodings, to bound counts against the bytes left before allocating.
constexpr uint64_t kMinFunctionBytes = 4 + 8 + 4 * 8 + 8;
constexpr uint64_t kMinConstantBytes = 4 + 8;
constexpr uint64_t kMaxShapeRank = 64;
constexpr int kArgKindShift = 56;
constexpr uint64_t kArgValueMask = (uint64_t{1} << kArgKindShift) - 1;

int64_t SignExtend56(uint64_t word) {
  const uint64_t value = word & kArgValueMask;
  return (value & (uint64_t{1} << 55)) ? static_cast<int64_t>(value | ~kArgValueMask) : static_cast<int64_t>(value);
}

uint64_t EncodeArg(const RelaxArg& arg) {
  if (arg.kind == RelaxArg::Kind::kRegister) return static_cast<uint64_t>(arg.value);
  return (static_cast<uint64_t>(arg.kind) << kArgKindShift) | (static_cast<uint64_t>(arg.value) & kArgValueMask);
}

Status ReadStringVector(ByteReader& r, std::vector<std::string>* out, std::string_view field) {
  uint64_t count = 0;
  HETRT_RETURN_IF_ERROR(r.ReadCount(&count, 8, field));
  out->resize(static_cast<size_t>(count));
  for (std::string& s : *out) HETRT_RETURN_IF_ERROR(r.ReadString(&s, field));
  return OkStatus();
}

Status ReadI64Vector(ByteReader& r, std::vector<int64_t>* out, std::string_view field) {
  uint64_t count = 0;
  HETRT_RETURN_IF_ERROR(r.ReadCount(&count, 8, field));
  out->resize(static_cast<size_t>(count));
  for (int64_t& v : *out) HETRT_RETURN_IF_ERROR(r.ReadI64(&v, field));
  return OkStatus();
}

Status ReadFunction(ByteReader& r, RelaxFunction* f) {
  int32_t kind = 0;
  HETRT_RETURN_IF_ERROR(r.ReadI32(&kind, "function kind"));
  HETRT_RETURN_IF_ERROR(r.ReadString(&f->name, "function name"));
  if (kind < 0 || kind > 2)
    return r.Error("function kind", "function '" + f->name + "' has kind " + std::to_string(kind) +
                                        ", expected 0 (packed), 1 (VM) or 2 (VM TIR)");
  f->kind = static_cast<RelaxFunction::Kind>(kind);
  HETRT_RETURN_IF_ERROR(r.ReadI64(&f->start_instr, "function start_instr"));
  HETRT_RETURN_IF_ERROR(r.ReadI64(&f->end_instr, "function end_instr"));
  HETRT_RETURN_IF_ERROR(r.ReadI64(&f->num_args, "function num_args"));
  HETRT_RETURN_IF_ERROR(r.ReadI64(&f->register_file_size, "function register_file_size"));
  return ReadStringVector(r, &f->param_names, "function param_names");
}

// The tag of each RelaxConstant::Type, per ABI (indexed by the Type's value).
constexpr int32_t kPackedTags[] = {0, 1, 2, 3, 4, 5};
constexpr int32_t kTvmFfiTags[] = {70, 5, 69, 65, 1, 3};

const int32_t* TagsOf(LibraryAbi abi) { return abi == LibraryAbi::kTvmFfi ? kTvmFfiTags : kPackedTags; }

Status ReadConstant(ByteReader& r, size_t index, LibraryAbi abi, RelaxConstant* c) {
  const std::string field = "constant " + std::to_string(index);
  int32_t tag = 0;
  HETRT_RETURN_IF_ERROR(r.ReadI32(&tag, field + " type"));
  int32_t type = -1;
  for (int32_t t = 0; t < 6; ++t)
    if (TagsOf(abi)[t] == tag) type = t;
  switch (type) {
    case 0: {
      HETRT_ASSIGN_OR_RETURN(c->tensor, ReadNDArray(r), field);
      break;
    }
    case 1:
      HETRT_RETURN_IF_ERROR(r.ReadU8(&c->dtype.code, field + " dtype code"));
      HETRT_RETURN_IF_ERROR(r.ReadU8(&c->dtype.bits, field + " dtype bits"));
      HETRT_RETURN_IF_ERROR(r.ReadU16(&c->dtype.lanes, field + " dtype lanes"));
      break;
    case 2: {
      uint64_t ndim = 0;
      HETRT_RETURN_IF_ERROR(r.ReadCount(&ndim, 8, field + " shape rank"));
      if (ndim > kMaxShapeRank) return r.Error(field, "shape of rank " + std::to_string(ndim) + " (at most 64)");
      c->shape.resize(static_cast<size_t>(ndim));
      for (int64_t& d : c->shape) HETRT_RETURN_IF_ERROR(r.ReadI64(&d, field + " shape"));
      break;
    }
    case 3:
      HETRT_RETURN_IF_ERROR(r.ReadString(&c->string, field + " string"));
      break;
    case 4:
      HETRT_RETURN_IF_ERROR(r.ReadI64(&c->int_value, field + " int"));
      break;
    case 5:
      static_assert(sizeof(double) == 8);
      HETRT_RETURN_IF_ERROR(r.ReadF64(&c->float_value, field + " float"));
      break;
    default:
      return r.Error(field + " type", "unknown constant tag " + std::to_string(tag) +
                                          (abi == LibraryAbi::kTvmFfi
                                               ? " for a tvm-ffi library (70 tensor, 5 dtype, 69 shape, 65 string, 1 "
                                                 "int, 3 float)"
                                               : " (0 tensor, 1 dtype, 2 shape, 3 string, 4 int, 5 float)"));
  }
  c->type = static_cast<RelaxConstant::Type>(type);
  return OkStatus();
}

const char* OpName(RelaxInstruction::Op op) {
  switch (op) {
    case RelaxInstruction::Op::kCall: return "call";
    case RelaxInstruction::Op::kRet: return "ret";
    case RelaxInstruction::Op::kGoto: return "goto";
    case RelaxInstruction::Op::kIf: return "if";
  }
  return "?";
}

// Splits instr_data into instructions at instr_offset, checking each one's length.
Status DecodeCode(const std::vector<int64_t>& offsets, const std::vector<int64_t>& words, const std::string& source,
                  RelaxExecutable* exe) {
  auto bad = [&](size_t i, const std::string& why) {
    return DataLoss(source + ": code: instruction " + std::to_string(i) + ": " + why);
  };
  exe->instructions.resize(offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    const int64_t begin = offsets[i];
    const int64_t limit = i + 1 < offsets.size() ? offsets[i + 1] : static_cast<int64_t>(words.size());
    if (begin < 0 || begin >= static_cast<int64_t>(words.size()))
      return bad(i, "starts at word " + std::to_string(begin) + ", outside instr_data (" +
                        std::to_string(words.size()) + " words)");
    if (limit <= begin || limit > static_cast<int64_t>(words.size()))
      return bad(i, "instr_offset is not increasing (" + std::to_string(begin) + " then " + std::to_string(limit) + ")");
    RelaxInstruction& in = exe->instructions[i];
    const int64_t opcode = words[static_cast<size_t>(begin)];
    int64_t length = 0;
    switch (opcode) {
      case 1: length = 4; break;
      case 2: length = 2; break;
      case 3: length = 2; break;
      case 4: length = 3; break;
      default: return bad(i, "unknown opcode " + std::to_string(opcode) + " (1 call, 2 ret, 3 goto, 4 if)");
    }
    if (limit - begin < length) return bad(i, std::string(OpName(static_cast<RelaxInstruction::Op>(opcode))) +
                                                   " needs " + std::to_string(length) + " words, has " +
                                                   std::to_string(limit - begin));
    in.op = static_cast<RelaxInstruction::Op>(opcode);
    const int64_t* w = words.data() + begin;
    in.reg = w[1];
    if (opcode == 3) in.operand = w[1], in.reg = 0;
    if (opcode == 4) in.operand = w[2];
    if (opcode == 1) {
      in.operand = w[2];
      const int64_t num_args = w[3];
      if (num_args < 0 || num_args > limit - begin - 4)
        return bad(i, "call has " + std::to_string(num_args) + " arguments but " + std::to_string(limit - begin - 4) +
                          " words before the next instruction");
      length += num_args;
      in.args_begin = static_cast<uint32_t>(exe->args.size());
      in.num_args = static_cast<uint32_t>(num_args);
      for (int64_t k = 0; k < num_args; ++k) {
        const uint64_t word = static_cast<uint64_t>(w[4 + k]);
        const uint64_t kind = word >> kArgKindShift;
        if (kind > 3)
          return bad(i, "argument " + std::to_string(k) + " has kind " + std::to_string(kind) +
                            " (0 register, 1 immediate, 2 constant, 3 function)");
        RelaxArg arg;
        arg.kind = static_cast<RelaxArg::Kind>(kind);
        arg.value = arg.kind == RelaxArg::Kind::kRegister ? static_cast<int64_t>(word) : SignExtend56(word);
        exe->args.push_back(arg);
      }
    }
    if (length != limit - begin)
      return bad(i, std::to_string(limit - begin - length) + " stray word(s) after the " +
                        OpName(in.op) + " instruction");
  }
  return OkStatus();
}

// Checks one VM function's code against its register file and the tables.
Status ValidateFunction(const RelaxExecutable& exe, const RelaxFunction& f, const std::string& source) {
  const auto n_instr = static_cast<int64_t>(exe.instructions.size());
  const auto where = [&](int64_t pc) {
    return source + ": function '" + f.name + "' instruction " + std::to_string(pc - f.start_instr) + " (" +
           OpName(exe.instructions[static_cast<size_t>(pc)].op) + ")";
  };
  if (f.num_args < 0 || f.num_args != static_cast<int64_t>(f.param_names.size()))
    return DataLoss(source + ": function '" + f.name + "': num_args " + std::to_string(f.num_args) + " but " +
                    std::to_string(f.param_names.size()) + " parameter names");
  if (f.register_file_size < f.num_args || f.register_file_size > kRelaxMaxRegisters)
    return DataLoss(source + ": function '" + f.name + "': register_file_size " +
                    std::to_string(f.register_file_size) + " (needs " + std::to_string(f.num_args) + ".." +
                    std::to_string(kRelaxMaxRegisters) + ")");
  if (!(0 <= f.start_instr && f.start_instr < f.end_instr && f.end_instr <= n_instr))
    return DataLoss(source + ": function '" + f.name + "': instructions [" + std::to_string(f.start_instr) + ", " +
                    std::to_string(f.end_instr) + ") are not inside the code (" + std::to_string(n_instr) +
                    " instructions)");
  const auto is_register = [&](int64_t r) { return r >= 0 && r < f.register_file_size; };
  const auto in_function = [&](int64_t pc) { return pc >= f.start_instr && pc < f.end_instr; };
  for (int64_t pc = f.start_instr; pc < f.end_instr; ++pc) {
    const RelaxInstruction& in = exe.instructions[static_cast<size_t>(pc)];
    switch (in.op) {
      case RelaxInstruction::Op::kCall: {
        if (in.operand < 0 || in.operand >= static_cast<int64_t>(exe.functions.size()))
          return DataLoss(where(pc) + ": function index " + std::to_string(in.operand) + " out of range (" +
                          std::to_string(exe.functions.size()) + " functions)");
        const std::string call = where(pc) + " of '" + exe.functions[static_cast<size_t>(in.operand)].name + "'";
        if (!is_register(in.reg) && in.reg != kRelaxVoidRegister)
          return DataLoss(call + ": destination register " + std::to_string(in.reg) + " out of range (" +
                          std::to_string(f.register_file_size) + " registers)");
        const auto args = exe.ArgsOf(in);
        for (size_t k = 0; k < args.size(); ++k) {
          const RelaxArg& a = args[k];
          const std::string arg = call + ": argument " + std::to_string(k) + ": ";
          if (a.kind == RelaxArg::Kind::kRegister && !is_register(a.value) && a.value != kRelaxVoidRegister &&
              a.value != kRelaxVmRegister)
            return DataLoss(arg + "register " + std::to_string(a.value) + " out of range (" +
                            std::to_string(f.register_file_size) + " registers)");
          if (a.kind == RelaxArg::Kind::kConstIdx && (a.value < 0 || a.value >= static_cast<int64_t>(exe.constants.size())))
            return DataLoss(arg + "constant index " + std::to_string(a.value) + " out of range (" +
                            std::to_string(exe.constants.size()) + " constants)");
          if (a.kind == RelaxArg::Kind::kFuncIdx && (a.value < 0 || a.value >= static_cast<int64_t>(exe.functions.size())))
            return DataLoss(arg + "function index " + std::to_string(a.value) + " out of range (" +
                            std::to_string(exe.functions.size()) + " functions)");
        }
        break;
      }
      case RelaxInstruction::Op::kRet:
        if (!is_register(in.reg))
          return DataLoss(where(pc) + ": result register " + std::to_string(in.reg) + " out of range (" +
                          std::to_string(f.register_file_size) + " registers)");
        break;
      case RelaxInstruction::Op::kGoto:
        if (in.operand == 0 || !in_function(pc + in.operand))
          return DataLoss(where(pc) + ": jump by " + std::to_string(in.operand) + " leaves the function");
        break;
      case RelaxInstruction::Op::kIf:
        if (!is_register(in.reg))
          return DataLoss(where(pc) + ": condition register " + std::to_string(in.reg) + " out of range");
        if (in.operand <= 1 || !in_function(pc + in.operand) || !in_function(pc + 1))
          return DataLoss(where(pc) + ": false branch offset " + std::to_string(in.operand) + " leaves the function");
        break;
    }
  }
  const RelaxInstruction& last = exe.instructions[static_cast<size_t>(f.end_instr - 1)];
  if (last.op != RelaxInstruction::Op::kRet && last.op != RelaxInstruction::Op::kGoto)
    return DataLoss(where(f.end_instr - 1) + ": the function's last instruction must be ret or goto, else it runs "
                    "past its end");
  return OkStatus();
}

std::string RegisterName(int64_t r) {
  if (r == kRelaxVoidRegister) return "%void";
  if (r == kRelaxVmRegister) return "%vm";
  return "%" + std::to_string(r);
}

}  // namespace

int64_t RelaxExecutable::FindFunction(std::string_view name) const {
  for (size_t i = 0; i < functions.size(); ++i)
    if (functions[i].name == name) return static_cast<int64_t>(i);
  return -1;
}

namespace {

// V2's memory-scope section (read before the constants it refers to).
Status ReadMemoryScopes(ByteReader& r, std::vector<RelaxMemoryScope>* scopes) {
  uint64_t count = 0;
  HETRT_RETURN_IF_ERROR(r.ReadCount(&count, 16, "memory-scope section size"));
  scopes->resize(static_cast<size_t>(count));
  for (RelaxMemoryScope& s : *scopes) {
    HETRT_RETURN_IF_ERROR(r.ReadI64(&s.constant, "memory-scope constant index"));
    HETRT_RETURN_IF_ERROR(r.ReadString(&s.scope, "memory scope"));
  }
  return OkStatus();
}

Status CheckMemoryScopes(const RelaxExecutable& exe, const std::string& source) {
  for (const RelaxMemoryScope& s : exe.memory_scopes) {
    const std::string what = source + ": memory scope '" + s.scope + "' of constant " + std::to_string(s.constant);
    if (s.constant < 0 || s.constant >= static_cast<int64_t>(exe.constants.size()))
      return DataLoss(what + ": no such constant (" + std::to_string(exe.constants.size()) + " constants)");
    if (exe.constants[static_cast<size_t>(s.constant)].type != RelaxConstant::Type::kTensor)
      return DataLoss(what + ": the constant is not a tensor");
    if (!s.scope.empty() && s.scope != "global")
      return Unimplemented(what + ": hetrt allocates constants in global memory only (texture scopes are not "
                                  "supported)");
  }
  return OkStatus();
}

}  // namespace

Result<RelaxExecutable> ParseRelaxExecutable(std::span<const uint8_t> image, const std::string& source,
                                             LibraryAbi abi) {
  ByteReader r(image, source);
  RelaxExecutable exe;
  exe.abi = abi;
  uint64_t magic = 0;
  HETRT_RETURN_IF_ERROR(r.ReadU64(&magic, "relax.Executable magic"));
  exe.v2 = magic == kRelaxExecutableMagicV2;
  if (magic != kRelaxExecutableMagic && !exe.v2)
    return r.Error("relax.Executable magic", "not a Relax VM executable");
  if (exe.v2 && abi != LibraryAbi::kTvmFfi)
    return DataLoss(source + ": a V2 executable image (TVM v0.23+) in a library of the packed-function ABI "
                             "(TVM v0.20 or older): the file's parts disagree about which TVM wrote it");
  HETRT_RETURN_IF_ERROR(r.ReadString(&exe.version, "relax.Executable version"));
  if (exe.version != kRelaxExecutableVersion)
    return Unimplemented(source + ": Relax executable version '" + exe.version + "'; hetrt reads version '" +
                         kRelaxExecutableVersion + "' (TVM v0.14 to v0.19)");
  uint64_t count = 0;
  HETRT_RETURN_IF_ERROR(r.ReadCount(&count, kMinFunctionBytes, "function table size"));
  exe.functions.resize(static_cast<size_t>(count));
  std::unordered_set<std::string> names;
  for (RelaxFunction& f : exe.functions) {
    HETRT_RETURN_IF_ERROR(ReadFunction(r, &f));
    if (!names.insert(f.name).second) return r.Error("function table", "function '" + f.name + "' appears twice");
    if (f.kind == RelaxFunction::Kind::kVmTirFunc)
      return Unimplemented(source + ": function '" + f.name +
                           "' is compiled VM code (kVMTIRFunc, relax.build exec_mode=\"compiled\"), which hetrt does "
                           "not run; build with exec_mode=\"bytecode\" (the default)");
  }
  if (exe.v2) HETRT_RETURN_IF_ERROR(ReadMemoryScopes(r, &exe.memory_scopes));
  HETRT_RETURN_IF_ERROR(r.ReadCount(&count, kMinConstantBytes, "constant pool size"));
  exe.constants.resize(static_cast<size_t>(count));
  for (size_t i = 0; i < exe.constants.size(); ++i)
    HETRT_RETURN_IF_ERROR(ReadConstant(r, i, abi, &exe.constants[i]));
  HETRT_RETURN_IF_ERROR(CheckMemoryScopes(exe, source));
  std::vector<int64_t> offsets, words;
  HETRT_RETURN_IF_ERROR(ReadI64Vector(r, &offsets, "instr_offset"));
  HETRT_RETURN_IF_ERROR(ReadI64Vector(r, &words, "instr_data"));
  if (r.remaining() != 0)
    return r.Error("end of executable", std::to_string(r.remaining()) + " trailing byte(s) after the code section");
  HETRT_RETURN_IF_ERROR(DecodeCode(offsets, words, source, &exe));
  for (const RelaxFunction& f : exe.functions)
    if (f.kind == RelaxFunction::Kind::kVmFunc) HETRT_RETURN_IF_ERROR(ValidateFunction(exe, f, source));
  return exe;
}

Result<std::vector<uint8_t>> WriteRelaxExecutable(const RelaxExecutable& exe) {
  ByteWriter w;
  w.WriteU64(exe.v2 ? kRelaxExecutableMagicV2 : kRelaxExecutableMagic);
  w.WriteString(exe.version);
  w.WriteU64(exe.functions.size());
  for (const RelaxFunction& f : exe.functions) {
    w.WritePod<int32_t>(static_cast<int32_t>(f.kind));
    w.WriteString(f.name);
    for (int64_t v : {f.start_instr, f.end_instr, f.num_args, f.register_file_size}) w.WritePod<int64_t>(v);
    w.WriteU64(f.param_names.size());
    for (const std::string& p : f.param_names) w.WriteString(p);
  }
  if (exe.v2) {
    w.WriteU64(exe.memory_scopes.size());
    for (const RelaxMemoryScope& s : exe.memory_scopes) w.WritePod<int64_t>(s.constant), w.WriteString(s.scope);
  }
  w.WriteU64(exe.constants.size());
  for (const RelaxConstant& c : exe.constants) {
    // A type outside the enum (tests writing broken files) is written as it is.
    const int32_t type = static_cast<int32_t>(c.type);
    w.WritePod<int32_t>(type >= 0 && type < 6 ? TagsOf(exe.abi)[type] : type);
    switch (c.type) {
      case RelaxConstant::Type::kTensor: HETRT_RETURN_IF_ERROR(WriteNDArray(c.tensor, w)); break;
      case RelaxConstant::Type::kDataType:
        w.WritePod(c.dtype.code), w.WritePod(c.dtype.bits), w.WritePod(c.dtype.lanes);
        break;
      case RelaxConstant::Type::kShape:
        w.WriteU64(c.shape.size());
        for (int64_t d : c.shape) w.WritePod<int64_t>(d);
        break;
      case RelaxConstant::Type::kString: w.WriteString(c.string); break;
      case RelaxConstant::Type::kInt: w.WritePod<int64_t>(c.int_value); break;
      case RelaxConstant::Type::kFloat: w.WritePod<double>(c.float_value); break;
    }
  }
  std::vector<int64_t> offsets, words;
  for (const RelaxInstruction& in : exe.instructions) {
    offsets.push_back(static_cast<int64_t>(words.size()));
    words.push_back(static_cast<int64_t>(in.op));
    switch (in.op) {
      case RelaxInstruction::Op::kCall:
        words.push_back(in.reg);
        words.push_back(in.operand);
        words.push_back(in.num_args);
        for (const RelaxArg& a : exe.ArgsOf(in)) words.push_back(static_cast<int64_t>(EncodeArg(a)));
        break;
      case RelaxInstruction::Op::kRet: words.push_back(in.reg); break;
      case RelaxInstruction::Op::kGoto: words.push_back(in.operand); break;
      case RelaxInstruction::Op::kIf:
        words.push_back(in.reg);
        words.push_back(in.operand);
        break;
    }
  }
  for (const auto* v : {&offsets, &words}) {
    w.WriteU64(v->size());
    for (int64_t x : *v) w.WritePod<int64_t>(x);
  }
  return w.Take();
}

std::string DescribeRelaxConstant(const RelaxConstant& c) {
  switch (c.type) {
    case RelaxConstant::Type::kTensor:
      return "tensor " + DataTypeToString(c.tensor.dtype()) + ShapeToString(c.tensor.shape()) + ", " +
             std::to_string(c.tensor.nbytes()) + " bytes";
    case RelaxConstant::Type::kDataType: return "dtype " + DataTypeToString(c.dtype);
    case RelaxConstant::Type::kShape: return "shape " + ShapeToString(c.shape);
    case RelaxConstant::Type::kString: return "string \"" + c.string + "\"";
    case RelaxConstant::Type::kInt: return "int " + std::to_string(c.int_value);
    case RelaxConstant::Type::kFloat: return "float " + std::to_string(c.float_value);
  }
  return "?";
}

std::string DisassembleRelaxExecutable(const RelaxExecutable& exe) {
  std::string out;
  for (const RelaxFunction& f : exe.functions) {
    if (f.kind != RelaxFunction::Kind::kVmFunc) {
      out += "@" + f.name + " packed_func;\n\n";
      continue;
    }
    out += "@" + f.name + "(";
    for (size_t i = 0; i < f.param_names.size(); ++i) out += (i ? ", " : "") + f.param_names[i];
    out += "): " + std::to_string(f.register_file_size) + " registers\n";
    for (int64_t pc = f.start_instr; pc < f.end_instr; ++pc) {
      const RelaxInstruction& in = exe.instructions[static_cast<size_t>(pc)];
      out += "  " + std::to_string(pc - f.start_instr) + ": ";
      switch (in.op) {
        case RelaxInstruction::Op::kCall: {
          out += "call  " + exe.functions[static_cast<size_t>(in.operand)].name + " in: ";
          bool first = true;
          for (const RelaxArg& a : exe.ArgsOf(in)) {
            out += first ? "" : ", ";
            first = false;
            switch (a.kind) {
              case RelaxArg::Kind::kRegister: out += RegisterName(a.value); break;
              case RelaxArg::Kind::kImmediate: out += "i" + std::to_string(a.value); break;
              case RelaxArg::Kind::kConstIdx: out += "c[" + std::to_string(a.value) + "]"; break;
              case RelaxArg::Kind::kFuncIdx: out += "f[" + exe.functions[static_cast<size_t>(a.value)].name + "]"; break;
            }
          }
          out += " dst: " + RegisterName(in.reg);
          break;
        }
        case RelaxInstruction::Op::kRet: out += "ret   " + RegisterName(in.reg); break;
        case RelaxInstruction::Op::kGoto: out += "goto  " + std::to_string(in.operand); break;
        case RelaxInstruction::Op::kIf:
          out += "if    " + RegisterName(in.reg) + ", " + std::to_string(in.operand);
          break;
      }
      out += "\n";
    }
    out += "\n";
  }
  return out;
}

}  // namespace hetrt
