// gguf_dequant FILE.gguf OUT_DIR RUNTIME_DIR: every tensor of the file as tgc reads it (f32 values
// of gguf_weight, dequantized from the file's own bytes), evaluated twice: by the reference
// interpreter (OUT_DIR/interp/NAME.npy) and by a compiled cpu artifact (OUT_DIR/cpu/NAME.npy).
// tests/integration/gguf/gguf_dequant_check.py compares both with gguf-py's dequantize, bit for bit.
// For the types int8_matmul.h multiplies, also x @ NAME^T in the int8 form (NAME.int8) with the
// quantized activations it used (NAME.act_words, NAME.act_scale), for the check script to compare
// with the dequantized product.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "codegen/pipeline.h"
#include "frontend/gguf/gguf_file.h"
#include "frontend/gguf/gguf_weights.h"
#include "frontend/gguf/int8_matmul.h"
#include "frontend/npy.h"
#include "ir/error.h"
#include "ir/interpret.h"

int main(int argc, char** argv) {
  using namespace tgc;
  namespace fs = std::filesystem;
  if (argc != 4) {
    std::cerr << "usage: gguf_dequant FILE.gguf OUT_DIR RUNTIME_DIR\n";
    return 2;
  }
  try {
    GgufFile f = GgufFile::open(argv[1]);
    fs::path out = argv[2];
    Model m;
    m.path = argv[1];
    m.graph = std::make_unique<Graph>();
    // One input so that the artifact has something to read; each output is multiplied by it
    // (1 at run time), which keeps every output a computed kernel without changing a bit (adding
    // 0 would turn -0 into +0).
    Tensor one = Tensor::input(*m.graph, "one", DType::F32, {1});
    m.inputs.push_back({"one", one});
    for (const GgufTensorInfo& t : f.tensors()) {
      Tensor w = gguf_weight(*m.graph, f, t);
      m.outputs.push_back({t.name, w * one.reshape(Shape(size_t(w.ndim()), 1)).expand(w.shape())});
      if (!int8_matmul_supported(t.type)) continue;
      // Activations spanning a few orders of magnitude, so that blocks get different scales.
      const int64_t n = 5, K = t.dims[0];
      HostTensor xs(DType::F32, {n, K});
      for (int64_t i = 0; i < n * K; ++i) xs.set(i, std::sin(0.7 * double(i)) * std::exp2(double(i / 32 % 5) - 2));
      Tensor x = Tensor::weight(*m.graph, t.name + ".x", std::move(xs)) * one.reshape({1, 1}).expand({n, K});
      Q8Activations q = quantize_q8(x);
      m.outputs.push_back({t.name + ".int8", int8_matmul(q, int8_weight(*m.graph, f, t, 16))});
      m.outputs.push_back({t.name + ".act_words", q.words});
      m.outputs.push_back({t.name + ".act_scale", q.scale});
    }
    HostTensor z(DType::F32, {1});
    z.set(0, 1.0);
    std::vector<HostTensor> ref = interpret(*m.graph, m.output_roots(), {{one.uop()->ival(), z}});
    fs::create_directories(out / "interp");
    for (size_t i = 0; i < ref.size(); ++i)
      write_npy((out / "interp" / (file_safe(m.outputs[i].name) + ".npy")).string(), ref[i]);
    write_npy((out / "one.npy").string(), z);
    CompileOptions opt;
    opt.output = (out / "dequant").string();
    opt.runtime_dir = argv[3];
    compile_model(m, opt);
    std::string cmd =
        "'" + opt.output + "' -i one='" + (out / "one.npy").string() + "' -o '" + (out / "cpu").string() + "'";
    if (std::system(cmd.c_str()) != 0) throw Error("the artifact failed: " + cmd);
  } catch (const std::exception& e) {
    std::cerr << "gguf_dequant: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
