// tgc: the command-line driver. Subcommands: compile, inspect, eval.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/dialect.h"
#include "codegen/gpu/image_weights.h"
#include "codegen/llvm/cpu_kernel.h"
#include "codegen/llvm/target.h"
#include "codegen/pipeline.h"
#include "frontend/npy.h"
#include "frontend/frontend.h"
#include "frontend/gguf/gguf_file.h"
#include "ir/error.h"
#include "ir/print.h"
#include "model/dynamic_dims.h"
#include "model/evaluate.h"
#include "passes/lower.h"
#include "passes/opt.h"
#include "passes/precision.h"
#include "passes/schedule.h"
#include "target/targets.h"
#include "tune/tuner.h"
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <optional>

namespace {
using namespace tgc;

const char* kUsage = R"(tgc - ahead-of-time model compiler

usage:
  tgc compile MODEL.onnx -o PATH [--target=NAME] [--triple=T] [--cpu=NAME] [--shared]
              [--weights=auto|embedded|external] [--input-shape NAME=d0,d1,...] [--input-value NAME=v0,...]
              [--dynamic NAME=MAX] [--max-trips N] [--ctx N] [--kv-type f16|f32] [--quant-matmul int8|f32]
              [--precision=fp32|fp16|bf16|tf32] [--no-opt] [--jobs=N]
      Compile to a standalone executable (default) or, with --shared, PATH=libNAME.so plus
      NAME.h beside it. --triple: x86_64-linux-gnu or aarch64-linux-gnu (default: host).
      --cpu: the CPU the kernels are built for (default: this machine's for its own architecture,
      generic for another): an x86-64 level, x86-64-v2 (SSE4.2), x86-64-v3 (AVX2: Haswell, Zen
      and later; for binaries to ship) or x86-64-v4 (AVX-512), or an LLVM CPU name (haswell,
      znver4, neoverse-v1, ...; llc-19 -mtriple=x86_64 -mcpu=help). On a CPU without a feature
      they need, the artifact stops before running them and says what is missing.
      --weights: inside the artifact, or in PATH.weights beside it (mapped at run time); auto
      (default) embeds up to 1 GiB.
      --input-value fixes an input at compile time (e.g. a sample rate that selects an If
      branch): the artifact is specialised and no longer takes that input.
      --precision=fp16|bf16: weights and the tensors between kernels are stored in 16 bits
      (half the memory traffic); kernels compute in f32, reduces accumulate in f32, and the
      artifact's inputs and outputs keep their types. fp32 (default) changes nothing. fp16 on
      vulkan/adreno and qcom, where the device has f16 arithmetic (shaderFloat16,
      cl_khr_fp16; f32 elsewhere): add, multiply, max and select of f16 values run in f16. On
      cuda, matrix products of f16 (sm_70+) and bf16 (sm_80+) operands run on tensor cores (f32
      accumulation); with --target=cuda:sm_90a (H100, H200 only) large ones through Hopper's
      wgmma. tf32 (cuda sm_80+): f32 storage, f32 matrix products on tensor cores as
      tf32 (10 mantissa bits); an error on other targets.
      --no-opt: skip the target's kernel optimizations (register tiles, vector lanes).
      --jobs: threads that generate CPU kernel code (default: one per core).
      Symbolic input dims need sizes (--input-shape; `?` keeps a dim symbolic), except the
      batch: a leading dim shared by the inputs stays dynamic when no node mixes samples, and
      the artifact binds it from its input shapes at run time (one sample's program per sample).
      --dynamic NAME=MAX keeps the symbolic dim NAME (its ONNX dim_param, e.g. a sequence
      length) as a run-time dim up to MAX instead: kernels loop to its value. NAME=MAX/STEP:
      multiples of STEP only (a detector's image size in multiples of 32: x:2=640/32).
      --max-trips N: a Loop whose trip count or condition depends on the inputs' values runs
      up to N iterations (unrolled; the scan outputs are as long as the iterations that ran;
      iterations past N are not run).
      GGUF (llama, qwen2): the artifact keeps K/V caches between runs; each run appends its
      tokens (--dynamic n_tokens=MAX, default 512, or --input-shape tokens=N) after the previous
      run's. --ctx N: cache rows (default: the model's context length, at most 4096).
      --kv-type f16: caches of f16 (half the memory; llama.cpp's default), f32 by default.
      --quant-matmul: quantized weights (q4_0 ... q8_0, q4_K ... q6_K) multiply as int8 dot
      products over activations quantized to q8_0, as llama.cpp does (int8, the default on
      CPUs), or dequantized to f32 (f32, the default on GPUs).
  tgc compile ... --beam=N [--tune-via=CMD] [--tune-cache=PATH] [--tune-timeout=SECONDS]
      Tune each kernel by BEAM search (keeping the N fastest action lists per round): candidates
      are built and timed on the target by tgc-agent, started with `sh -c CMD` (default: the
      tgc-agent next to tgc, for host triples; e.g. --tune-via="ssh board tgc-agent" or
      --tune-via="qemu-aarch64 -L /usr/aarch64-linux-gnu build/tgc-agent-aarch64"). For
      --target=qcom the candidates are OpenCL C, timed on the agent's OpenCL device (default:
      this machine's, e.g. pocl; --tune-via="adb shell /data/local/tmp/tgc-agent" for a phone);
      for vulkan and adreno SPIR-V on its Vulkan device, for cuda PTX on its CUDA device. A candidate
      that crashes or runs past --tune-timeout (default 10) is dropped. Results are kept in a
      SQLite cache (default $XDG_CACHE_HOME/tgc/tune.sqlite or ~/.cache/tgc/tune.sqlite) keyed
      by target, device and kernel, and reused by later compiles. See docs/tuning.md.
  tgc inspect MODEL [--stage=graph|kernels|loops|source|blob|llvm|asm|meta] [--kernel=NAME [--opts=LIST]] [-o DIR]
              [--input-shape NAME=d0,d1,...] [--dynamic NAME=MAX]
              [--target=NAME] [--triple=T] [--cpu=NAME] [--precision=P] [--no-opt]
      Print the IR graph, the kernels the scheduler cuts it into with what each fuses, the
      loop program of each kernel after the target's optimizations (listed before each), each
      kernel's source (GPU targets: OpenCL C, GLSL, PTX; cpu: LLVM IR), with --stage=blob -o DIR each GPU
      kernel's launch blob as the artifact carries it (DIR/k12.bin: OpenCL C, SPIR-V, PTX), or
      each CPU kernel's LLVM IR as rendered (before O3) or assembly (after O3). --kernel: only that
      kernel (k12); --opts: its actions instead of the heuristic's, e.g. 'UPCAST(1,8) UNROLL(2,4)'.
      --stage=loops also shows a kernel's second schedule for some sizes of a run-time dim (GPUs:
      up to 8 tokens, an LLM's decode step; CPUs: large sizes, a prefill's token tiles).
      A dynamic batch dim is shown at batch 1 (the program the artifact runs per sample).
      --stage=meta (GGUF files): the metadata (long arrays abbreviated) and the tensor table.
  tgc eval MODEL.onnx -i NAME=FILE.npy ... [-o DIR] [--input-shape NAME=d0,...]
      Run the reference interpreter. NAME is the input's ONNX name or its file-safe form
      (characters outside [A-Za-z0-9._-] replaced by '_'). Writes DIR/<file-safe output>.npy
      per output, or prints each output's shape and checksum without -o.
  tgc --help

Errors are one line on stderr and exit status 1.

targets (--target, default cpu):
)";

std::string usage() {
  std::string u = kUsage;
  for (const TargetDesc& t : targets())
    u += "  " + t.name + std::string(t.name.size() < 8 ? 8 - t.name.size() : 1, ' ') + t.summary + "\n";
  return u;
}

struct Args {
  std::string command, model, stage = "graph", kernel, opts, out_dir;
  std::string target = "cpu", triple, cpu, weights = "auto", precision = "fp32";
  bool shared = false, optimize = true;
  int beam = 0, jobs = 0;
  std::string tune_via, tune_cache;
  double tune_timeout = 10;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, file
  std::map<std::string, Shape> input_shapes;
  std::map<std::string, std::vector<double>> input_values;
  std::map<std::string, int64_t> dynamic;       // --dynamic NAME=MAX
  std::map<std::string, int64_t> dynamic_step;  // --dynamic NAME=MAX/STEP
  int64_t context = 0;                          // --ctx N (GGUF)
  int64_t max_trips = 0;                        // --max-trips N
  DType kv_type = DType::F32;                   // --kv-type f16|f32 (GGUF)
  std::string quant_matmul = "auto";            // --quant-matmul int8|f32 (GGUF)
};

std::pair<std::string, std::string> split_eq(const std::string& s, const std::string& flag) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0) throw Error(flag + " expects NAME=VALUE, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

Shape parse_dims(const std::string& s, const std::string& what) {
  Shape dims;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok == "?") {  // the model's own dim, dynamic if it is symbolic
      dims.push_back(-1);
      continue;
    }
    try {
      size_t used = 0;
      long long v = std::stoll(tok, &used);
      if (used != tok.size() || v < 0) throw std::invalid_argument("");
      dims.push_back(v);
    } catch (const std::exception&) {
      throw Error(what + ": '" + tok + "' is not a dimension");
    }
  }
  return dims;
}

std::vector<double> parse_values(const std::string& s, const std::string& what) {
  std::vector<double> vals;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    try {
      size_t used = 0;
      vals.push_back(std::stod(tok, &used));
      if (used != tok.size()) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw Error(what + ": '" + tok + "' is not a number");
    }
  }
  return vals;
}

int parse_count(const std::string& s, const std::string& flag) {
  try {
    size_t used = 0;
    int v = std::stoi(s, &used);
    if (used == s.size() && v >= 1) return v;
  } catch (const std::exception&) {
  }
  throw Error(flag + " expects a positive integer, got '" + s + "'");
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

Args parse_args(int argc, char** argv) {
  Args a;
  std::vector<std::string> v(argv + 1, argv + argc);
  if (v.empty()) throw Error("no command given (try tgc --help)");
  a.command = v[0];
  for (size_t i = 1; i < v.size(); ++i) {
    const std::string& s = v[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (s.rfind(flag + "=", 0) == 0) return s.substr(flag.size() + 1);
      if (i + 1 >= v.size()) throw Error(flag + " needs a value");
      return v[++i];
    };
    if (s == "-i" || s.rfind("--input=", 0) == 0 || s == "--input")
      a.inputs.push_back(split_eq(value(s == "-i" ? "-i" : "--input"), "-i"));
    else if (s == "-o" || s.rfind("--output=", 0) == 0 || s == "--output")
      a.out_dir = value(s == "-o" ? "-o" : "--output");
    else if (s.rfind("--stage", 0) == 0)
      a.stage = value("--stage");
    else if (s.rfind("--kernel", 0) == 0)
      a.kernel = value("--kernel");
    else if (s.rfind("--opts", 0) == 0)
      a.opts = value("--opts");
    else if (s.rfind("--target", 0) == 0)
      a.target = value("--target");
    else if (s.rfind("--triple", 0) == 0)
      a.triple = value("--triple");
    else if (s.rfind("--cpu", 0) == 0)
      a.cpu = value("--cpu");
    else if (s.rfind("--weights", 0) == 0)
      a.weights = value("--weights");
    else if (s.rfind("--precision", 0) == 0)
      parse_precision(a.precision = value("--precision"));  // (checks the name)
    else if (s.rfind("--beam", 0) == 0)
      a.beam = parse_count(value("--beam"), "--beam");
    else if (s.rfind("--ctx", 0) == 0)
      a.context = parse_count(value("--ctx"), "--ctx");
    else if (s.rfind("--max-trips", 0) == 0)
      a.max_trips = parse_count(value("--max-trips"), "--max-trips");
    else if (s.rfind("--quant-matmul", 0) == 0) {
      a.quant_matmul = value("--quant-matmul");
      if (a.quant_matmul != "int8" && a.quant_matmul != "f32")
        throw Error("--quant-matmul " + a.quant_matmul + ": int8 or f32");
    } else if (s.rfind("--kv-type", 0) == 0) {
      std::string t = value("--kv-type");
      if (t != "f16" && t != "f32") throw Error("--kv-type " + t + ": f16 or f32");
      a.kv_type = t == "f16" ? DType::F16 : DType::F32;
    } else if (s.rfind("--jobs", 0) == 0)
      a.jobs = parse_count(value("--jobs"), "--jobs");
    else if (s.rfind("--tune-via", 0) == 0)
      a.tune_via = value("--tune-via");
    else if (s.rfind("--tune-cache", 0) == 0)
      a.tune_cache = value("--tune-cache");
    else if (s.rfind("--tune-timeout", 0) == 0)
      a.tune_timeout = parse_count(value("--tune-timeout"), "--tune-timeout");
    else if (s == "--shared")
      a.shared = true;
    else if (s == "--no-opt")
      a.optimize = false;
    else if (s.rfind("--input-shape", 0) == 0) {
      auto [name, dims] = split_eq(value("--input-shape"), "--input-shape");
      a.input_shapes[name] = parse_dims(dims, "--input-shape " + name);
    } else if (s.rfind("--dynamic", 0) == 0) {
      auto [name, bound] = split_eq(value("--dynamic"), "--dynamic");
      size_t slash = bound.find('/');  // MAX/STEP: multiples of STEP only
      int64_t max = parse_count(bound.substr(0, slash), "--dynamic " + name);
      a.dynamic[name] = max;
      if (slash != std::string::npos) {
        int64_t step = parse_count(bound.substr(slash + 1), "--dynamic " + name + " step");
        if (step < 1 || max % step != 0)
          throw Error("--dynamic " + name + "=" + bound + ": MAX must be a multiple of STEP");
        a.dynamic_step[name] = step;
      }
    } else if (s.rfind("--input-value", 0) == 0) {
      auto [name, vals] = split_eq(value("--input-value"), "--input-value");
      a.input_values[name] = parse_values(vals, "--input-value " + name);
    } else if (!s.empty() && s[0] == '-')
      throw Error("unknown option '" + s + "'");
    else if (a.model.empty())
      a.model = s;
    else
      throw Error("unexpected argument '" + s + "'");
  }
  if (a.model.empty()) throw Error(a.command + ": no model file given");
  return a;
}

// The model input an -i/--input-shape NAME refers to: its ONNX name or its file-safe form.
const NamedTensor& find_input(const Model& m, const std::string& name) {
  for (const NamedTensor& in : m.inputs)
    if (in.name == name || file_safe(in.name) == name) return in;
  throw Error("-i " + name + ": the model has no input of that name");
}

// What the frontend needs from the command line (and from the target: its int8 matmul tiles).
ImportOptions import_options(const Args& a) {
  ImportOptions o;
  o.input_shapes = a.input_shapes, o.input_values = a.input_values, o.dynamic = a.dynamic;
  o.context = a.context, o.kv_type = a.kv_type;
  o.max_loop_trips = a.max_trips;
  o.dynamic_step = a.dynamic_step;
  const ResolvedTarget target = resolve_target(a.target, a.triple, a.cpu);
  const TargetProfile& profile = target.profile;
  bool int8 = a.quant_matmul == "int8" || (a.quant_matmul == "auto" && !profile.gpu);
  if (int8) o.int8_rows = profile.gpu ? 16 : profile.vector_lanes;
  // onnxruntime's MLAS on x86 runs convs in blocks of 16 channels with AVX-512, else 8.
  if (!profile.gpu && arch_of(target.triple) == "x86_64") o.mlas_block = profile.vector_lanes >= 16 ? 16 : 8;
  return o;
}

// --stage=meta: the file as it is, before any graph: GGUF metadata and tensor table.
void inspect_meta(const Args& a) {
  if (!is_gguf_file(a.model))
    throw Error(a.model + ": --stage=meta lists a GGUF file's metadata; this is not a GGUF file");
  std::cout << describe_gguf(GgufFile::open(a.model));
}

// --stage=kernels: the kernels and serial launches, described.
void inspect_kernels(const Graph& g, const Schedule& s, const ResolvedTarget& target) {
  std::vector<SerialLaunch> serial = serial_launches(s, target);
  std::cout << "# " << s.kernels.size() << " kernels";
  if (!serial.empty()) std::cout << " in " << launch_count(s, serial) << " launches";
  std::cout << "\n";
  for (const SerialLaunch& l : serial)
    std::cout << "# serial launch " << serial_launch_name(s, l) << ": " << l.count << " kernels in one work-group\n";
  std::cout << run_stage("describe", [&] { return describe(g, s); });
}

// The kernels' actions and programs as compile_model chooses and lowers them (--opts for the
// kernel --kernel names). A serial launch's stages take their own actions; each is shown as a
// kernel of its own, and `--kernel=k3_k5 --stage=source` shows the launch's kernel.
struct InspectLowering {
  const Args& a;
  Graph& g;
  const Schedule& s;
  const ResolvedTarget& target;
  std::vector<std::vector<Opt>> chosen = std::vector<std::vector<Opt>>(s.kernels.size());
  std::vector<LoopProgram> programs = std::vector<LoopProgram>(s.kernels.size());
  std::vector<SerialLaunch> serial = serial_launches(s, target);
  std::vector<const SerialLaunch*> serial_of =
      std::vector<const SerialLaunch*>(s.kernels.size(), nullptr);  // the launch each stage is in
  const SerialLaunch* serial_shown = nullptr;

  InspectLowering(const Args& a, Graph& g, const Schedule& s, const ResolvedTarget& target)
      : a(a), g(g), s(s), target(target) {
    for (const SerialLaunch& l : serial) {
      for (size_t i = l.first; i < l.first + l.count; ++i) serial_of[i] = &l;
      if (serial_launch_name(s, l) == a.kernel) serial_shown = &l;
    }
  }

  void lower(size_t i) {
    const Kernel& plain = s.kernels[i];
    bool shown = a.kernel.empty() || plain.name == a.kernel;
    chosen[i] = shown && !a.opts.empty() ? parse_opts(a.opts)
                : !a.optimize            ? std::vector<Opt>{}
                : serial_of[i]           ? serial_stage_opts(plain, target.profile)
                                         : heuristic_opts(g, plain, target.profile);
    programs[i] = lower_kernel(g, plain, chosen[i], target).program;
  }
};

void check_lowered_stage(const Args& a, const ResolvedTarget& target) {
  const DialectOps& dialect = dialect_ops(target.desc->dialect);
  bool cpu = target.desc->dialect == Dialect::LlvmCpu;
  if ((a.stage == "llvm" || a.stage == "asm") && !cpu)
    throw Error("--stage=" + a.stage + " shows CPU kernels; --target=" + a.target + " renders " + dialect.name +
                " (use --stage=source)");
  if (a.stage == "blob" && (cpu || a.out_dir.empty()))
    throw Error("--stage=blob writes each GPU kernel's launch blob to -o DIR (GPU targets only)");
  if (a.stage == "blob") std::filesystem::create_directories(a.out_dir);
  if (!a.opts.empty() && a.kernel.empty()) throw Error("--opts needs --kernel (the actions are per kernel)");
}

// A CPU kernel as LLVM IR (`llvm_text`) or as assembly.
void show_cpu_kernel(const Graph& g, const ResolvedTarget& target, const std::string& name, const LoopProgram& p,
                     bool llvm_text) {
  llvm::LLVMContext ctx;
  llvm::Module mod(name, ctx);
  std::unique_ptr<llvm::TargetMachine> tm(make_target_machine(target.triple, target.cpu));
  mod.setDataLayout(tm->createDataLayout());
  mod.setTargetTriple(target.triple);
  render_cpu_kernel(mod, g, p, cpu_work_split(p), target.profile)->setLinkage(llvm::Function::ExternalLinkage);
  if (llvm_text) {
    mod.print(llvm::outs(), nullptr);
    llvm::outs().flush();
    return;
  }
  optimize(mod, tm.get());
  std::cout << assembly_text(mod, tm.get());
}

// The heuristic's second schedule of kernel i for some sizes of a run-time dim, as the compile
// picks it (codegen/pipeline.cpp, lower_with_variants): GPUs' few-tokens variant (an LLM's decode
// step), CPUs' schedule for large sizes (a prefill's token tiles).
void show_size_variant(const InspectLowering& lw, size_t i) {
  const Args& a = lw.a;
  const TargetProfile& t = lw.target.profile;
  const Kernel& plain = lw.s.kernels[i];
  if (!a.opts.empty() || !a.optimize || lw.serial_of[i] || t.serial_group) return;
  SizeVariant v =
      t.gpu ? few_tokens_variant(lw.g, plain, t, lw.chosen[i]) : large_size_variant(lw.g, plain, t, lw.chosen[i]);
  if (v.opts.empty()) return;
  bool source = a.stage == "source";  // a GPU kernel's source; loops otherwise
  std::cout << (source ? "// variant " : "# variant ") << plain.name
            << (t.gpu ? "_few" : "_from" + std::to_string(v.from)) << " (" << v.var->var().name
            << (t.gpu ? " <= " + std::to_string(v.until) : " >= " + std::to_string(v.from))
            << "), opts: " << opts_str(v.opts) << "\n";
  LoopProgram p = lower_kernel(lw.g, v.kernel ? *v.kernel : plain, v.opts, lw.target).program;
  std::cout << (source ? dialect_ops(lw.target.desc->dialect).render_source(lw.g, p, t) : print_program(lw.g, p));
}

// Kernel i, lowered, at the stage --stage names.
void show_kernel(const InspectLowering& lw, size_t i) {
  const Args& a = lw.a;
  const Kernel& plain = lw.s.kernels[i];
  const DialectOps& dialect = dialect_ops(lw.target.desc->dialect);
  bool cpu = lw.target.desc->dialect == Dialect::LlvmCpu;
  const std::vector<Opt>& opts = lw.chosen[i];
  const LoopProgram& p = lw.programs[i];
  bool llvm_text = cpu && (a.stage == "llvm" || a.stage == "source");
  // "; " starts a comment in LLVM IR, so `--stage=llvm` output feeds straight into opt-19.
  std::cout << (llvm_text             ? "; opts: "
                : a.stage == "source" ? "// opts: "
                                      : "# opts: ")
            << (opts.empty() ? "none" : opts_str(opts));
  if (lw.serial_of[i])
    std::cout << " (a stage of serial launch " << serial_launch_name(lw.s, *lw.serial_of[i])
              << ", which --kernel names)";
  std::cout << "\n";
  if (a.stage == "loops") {
    std::cout << print_program(lw.g, p);
    show_size_variant(lw, i);
  } else if (a.stage == "blob") {  // the bytes the artifact carries (SPIR-V for vulkan: spirv-val them)
    std::string path = (std::filesystem::path(a.out_dir) / (plain.name + ".bin")).string();
    std::ofstream out(path, std::ios::binary);
    out << dialect.render_gpu(lw.g, p, lw.target.profile).blob;
    if (!out.flush()) throw Error(path + ": write failed");
  } else if (!cpu) {
    std::cout << dialect.render_source(lw.g, p, lw.target.profile);
    show_size_variant(lw, i);
  } else {
    show_cpu_kernel(lw.g, lw.target, plain.name, p, llvm_text);
  }
}

// --stage=loops, source, llvm, asm or blob: each kernel (or the one --kernel names) lowered.
void inspect_lowered(const Args& a, Graph& g, const Schedule& s, const ResolvedTarget& target) {
  check_lowered_stage(a, target);
  // Where weights may be images, every kernel is lowered before any is shown: which weights
  // are images depends on all of them.
  bool images = target.desc->dialect != Dialect::LlvmCpu && target.profile.image_weights;
  InspectLowering lw(a, g, s, target);
  if (images) {
    for (size_t i = 0; i < s.kernels.size(); ++i) lw.lower(i);
    place_image_weights(g, lw.programs);
  }
  if (lw.serial_shown) {
    if (a.stage != "source")
      throw Error("--kernel " + a.kernel + " is a serial launch: --stage=source shows its kernel");
    std::vector<const LoopProgram*> stages;
    for (size_t i = lw.serial_shown->first; i < lw.serial_shown->first + lw.serial_shown->count; ++i) {
      if (!images) lw.lower(i);
      stages.push_back(&lw.programs[i]);
    }
    std::cout << dialect_ops(target.desc->dialect).render_serial(g, stages, a.kernel, target.profile).blob;
    return;
  }
  bool found = a.kernel.empty();
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    if (!a.kernel.empty() && s.kernels[i].name != a.kernel) continue;
    found = true;
    if (!images) lw.lower(i);
    show_kernel(lw, i);
  }
  if (!found) throw Error("--kernel " + a.kernel + ": no kernel of that name (see --stage=kernels)");
}

int cmd_inspect(const Args& a) {
  if (a.stage == "meta") {
    inspect_meta(a);
    return 0;
  }
  Model m = build_dynamic_model(open_model(a.model, import_options(a)));
  std::vector<const UOp*> roots = m.schedule_roots();  // as compile_model schedules them
  ResolvedTarget target = resolve_target(a.target, a.triple, a.cpu);
  apply_precision(target, parse_precision(a.precision));
  // As compile_model cuts and rewrites them.
  auto kernels = [&] {
    Schedule s = run_stage("schedule", [&] { return schedule(*m.graph, roots, schedule_options(target.profile)); });
    prepare_kernels(*m.graph, s, target.profile, a.optimize, parse_precision(a.precision).storage);
    return s;
  };
  if (a.stage == "graph")
    std::cout << print_graph(*m.graph, roots);
  else if (a.stage == "kernels")
    inspect_kernels(*m.graph, kernels(), target);
  else if (a.stage == "loops" || a.stage == "source" || a.stage == "llvm" || a.stage == "asm" || a.stage == "blob")
    inspect_lowered(a, *m.graph, kernels(), target);
  else
    throw Error("unknown --stage '" + a.stage + "' (graph, kernels, loops, source, blob, llvm, asm or meta)");
  return 0;
}

int cmd_compile(const Args& a) {
  if (a.out_dir.empty()) throw Error("compile: no output path (-o PATH)");
  if (a.weights != "embedded" && a.weights != "external" && a.weights != "auto")
    throw Error("--weights must be embedded, external or auto");
  auto t0 = std::chrono::steady_clock::now();
  Model m = build_dynamic_model(open_model(a.model, import_options(a)));
  CompileOptions opt;
  opt.target = a.target;
  opt.triple = a.triple;
  opt.cpu = a.cpu;
  opt.shared = a.shared;
  opt.optimize = a.optimize;
  opt.jobs = a.jobs;
  opt.precision = parse_precision(a.precision);
  // auto: weights past 1 GiB go beside the artifact (PATH.weights, mapped at run time): an
  // executable that large links slowly and loads whole, and past 2 GiB the default code model's
  // 32-bit offsets no longer reach its data.
  uint64_t weight_bytes = 0;
  for (size_t b = 0; b < m.graph->num_buffers(); ++b)
    if (const auto& d = m.graph->buffer(int64_t(b)).data) weight_bytes += d->size();
  constexpr uint64_t kEmbedLimit = uint64_t(1) << 30;
  opt.external_weights = a.weights == "external" || (a.weights == "auto" && weight_bytes > kEmbedLimit);
  if (a.weights == "auto" && opt.external_weights)
    std::cerr << "tgc: weights " << weight_bytes / (1 << 20) << " MiB: written to " << a.out_dir
              << ".weights beside the artifact, which maps them at run time (--weights=embedded keeps them inside)\n";
  opt.output = a.out_dir;
  std::filesystem::path tgc_dir = std::filesystem::canonical("/proc/self/exe").parent_path();
  opt.runtime_dir = (tgc_dir / "runtime").string();
  if (a.beam == 0 && (!a.tune_via.empty() || !a.tune_cache.empty()))
    throw Error("--tune-via and --tune-cache need --beam=N");
  std::optional<Tuner> tuner;
  if (a.beam > 0) {
    if (!a.optimize) throw Error("--beam and --no-opt exclude each other");
    TuneOptions to;
    to.beam.width = a.beam;
    to.agent_command = a.tune_via;
    if (to.agent_command.empty()) {
      // The local agent can only time CPU code for this machine; OpenCL kernels it times on
      // this machine's OpenCL device, whatever the triple of the artifact's host code.
      ResolvedTarget rt = resolve_target(a.target, a.triple, a.cpu);
      if (rt.desc->dialect == Dialect::LlvmCpu && arch_of(rt.triple) != arch_of(llvm::sys::getDefaultTargetTriple()))
        throw Error("--beam for " + rt.triple +
                    " needs --tune-via=CMD to start tgc-agent on such a machine (ssh, adb, or qemu for testing)");
      to.agent_command = shell_quote((tgc_dir / "tgc-agent").string());
    }
    to.cache_path = a.tune_cache;
    to.timeout_s = a.tune_timeout;
    to.log = &std::cerr;
    to.live = isatty(2);
    tuner.emplace(to);
    opt.choose_opts = [&](Graph& g, const std::vector<Kernel>& ks, const ResolvedTarget& t) {
      return tuner->choose(g, ks, t);
    };
  }
  CompileReport r = compile_model(m, opt);
  // (Names from the model file, escaped as in errors: every note stays one line.)
  if (!m.batch_dim.empty())
    std::cerr << "tgc: dim '" << printable(m.batch_dim)
              << "' is the batch size, bound at run time: the artifact runs one sample's program per sample\n";
  for (const UOp* v : m.graph->vars())
    if (std::find(r.branch_vars.begin(), r.branch_vars.end(), v) != r.branch_vars.end())
      std::cerr << "tgc: " << printable(v->var().name)
                << ": a condition known at run time, which runs only the branch it takes\n";
    else if (m.graph->var_value(v))
      std::cerr << "tgc: size '" << printable(v->var().name)
                << "' is computed by the model from its inputs' values at run time (0 to " << v->var().max << ")\n";
    else if (int64_t step = m.graph->var_step(v); step > 1)
      std::cerr << "tgc: dim '" << printable(v->var().name) << "' is bound at run time (" << m.graph->var_min(v) * step
                << " to " << v->var().max * step << " in multiples of " << step << ")\n";
    else
      std::cerr << "tgc: dim '" << printable(v->var().name) << "' is bound at run time (" << m.graph->var_min(v)
                << " to " << v->var().max << ")\n";
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string serial =
      r.launches != r.kernels ? " in " + std::to_string(r.launches) + (r.launches == 1 ? " launch" : " launches") : "";
  std::cerr << "tgc: " << a.out_dir << ": " << r.kernels << " kernels (" << r.unique_kernels << " distinct)" << serial
            << ", " << r.triple << " cpu=" << r.cpu << ", weights " << r.weight_bytes << " B, arena " << r.arena_bytes
            << " B (unshared " << r.intermediate_bytes << " B); schedule " << r.schedule_s << " s, "
            << (tuner ? "tune " + std::to_string(r.tune_s) + " s, " : "") << "codegen " << r.codegen_s << " s, link "
            << r.link_s << " s, total " << total << " s\n";
  return 0;
}

double checksum(const HostTensor& t) {
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i) s += t.get(i);
  return s;
}

int cmd_eval(const Args& a) {
  // Input files fix the shapes of dynamic dims unless --input-shape says otherwise.
  ImportOptions opt;
  opt.input_shapes = a.input_shapes, opt.input_values = a.input_values;
  opt.max_loop_trips = a.max_trips;
  std::vector<std::pair<std::string, HostTensor>> files;
  for (const auto& [name, file] : a.inputs) {
    files.push_back({name, read_npy(file)});
    opt.shape_hints[name] = files.back().second.shape;
  }
  Model m = import_model(a.model, opt);
  std::map<int64_t, HostTensor> feeds;
  for (auto& [name, data] : files) {
    const NamedTensor& in = find_input(m, name);
    const BufferInfo& b = m.graph->buffer(in.tensor.uop()->ival());
    if (data.dtype != b.dtype || data.shape != b.shape)
      throw Error("-i " + name + ": expected " + std::string(dtype_name(b.dtype)) + shape_str(b.shape) + ", got " +
                  std::string(dtype_name(data.dtype)) + shape_str(data.shape));
    feeds[in.tensor.uop()->ival()] = std::move(data);
  }
  for (const NamedTensor& in : m.inputs)
    if (!feeds.count(in.tensor.uop()->ival()))
      throw Error("missing input '" + in.name + "' (pass -i " + file_safe(in.name) + "=FILE.npy)");
  std::vector<HostTensor> results = evaluate(m, feeds);
  if (!a.out_dir.empty()) std::filesystem::create_directories(a.out_dir);
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string& name = m.outputs[i].name;
    if (a.out_dir.empty())
      std::cout << name << ": " << dtype_name(results[i].dtype) << shape_str(results[i].shape) << " checksum "
                << checksum(results[i]) << "\n";
    else
      write_npy((std::filesystem::path(a.out_dir) / (file_safe(name) + ".npy")).string(), results[i]);
  }
  return 0;
}

}  // namespace

int run_tgc(int argc, char** argv) {
  try {
    // `tgc --help`, `tgc help`, and --help after a command (`tgc compile --help`) all print it.
    bool help = argc >= 2 && std::string(argv[1]) == "help";
    for (int i = 1; i < argc; ++i) help = help || std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h";
    if (help) {
      std::cout << usage();
      return 0;
    }
    Args a = parse_args(argc, argv);
    if (a.command == "inspect") return cmd_inspect(a);
    if (a.command == "eval") return cmd_eval(a);
    if (a.command == "compile") return cmd_compile(a);
    throw Error("unknown command '" + a.command + "' (try tgc --help)");
  } catch (const Error& e) {
    std::cerr << "tgc: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    // Not a user error but a bug: say so, with what failed, never a bare library message.
    std::cerr << "tgc: internal error (" << (argc >= 2 ? argv[1] : "tgc") << "): " << e.what() << "\n";
    return 1;
  }
}

// The passes recurse along the graph, so a model's depth becomes stack depth: a chain of 30k ONNX
// nodes overflowed the main thread's 8 MiB. tgc runs on a thread with 1 GiB of (lazily committed)
// stack; 100k nodes then import and schedule (tests/faults/compile_faults.sh).
int main(int argc, char** argv) {
  struct Call {
    int argc;
    char** argv;
    int rc;
  } call{argc, argv, 1};
  pthread_attr_t attr;
  pthread_t t;
  bool started = pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, size_t(1) << 30) == 0 &&
                 pthread_create(
                     &t, &attr,
                     [](void* p) -> void* {
                       auto* c = static_cast<Call*>(p);
                       c->rc = run_tgc(c->argc, c->argv);
                       return nullptr;
                     },
                     &call) == 0;
  pthread_attr_destroy(&attr);
  if (!started) return run_tgc(argc, argv);  // no room for the big stack: run as before
  pthread_join(t, nullptr);
  return call.rc;
}
