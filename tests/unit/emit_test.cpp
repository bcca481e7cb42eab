// The emitter (codegen/emit.h) on a tiny model, its object read back with LLVM's object library
// (tests/unit/emitted_object.h): the entry points of an executable and of a shared library, the
// runtime backend the description points at, the weights file (each weight 64-byte aligned at
// the offset the description gives), embedded or external weights. And the C header
// (codegen/c_header.h) of a model with a batched input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "codegen/c_header.h"
#include "codegen/emit.h"
#include "codegen/llvm/target.h"
#include "emitted_object.h"
#include "runtime-stub/include/tgc_model.h"

namespace tgc {
namespace {
namespace fs = std::filesystem;
using Place = test::EmittedObject::Place;

HostTensor ramp(const Shape& s, double start) {
  HostTensor h(DType::F32, s);
  for (int64_t i = 0; i < h.numel(); ++i) h.set(i, start + double(i));
  return h;
}

// y = x * w1 + w2 and z = exp(w3): weights of 12, 24 and 100 bytes, so the second and third need
// padding up to their 64-byte boundaries.
Model tiny_model(bool batched) {
  Model m;
  m.graph = std::make_unique<Graph>();
  Graph& g = *m.graph;
  m.path = "/models/tiny.onnx";
  Tensor x = Tensor::input(g, "x", DType::F32, {batched ? 1 : 2, 3});
  Tensor w1 = Tensor::weight(g, "w1", ramp({3}, 1)), w2 = Tensor::weight(g, "w2", ramp({2, 3}, 10));
  Tensor w3 = Tensor::weight(g, "w3", ramp({25}, 100));
  m.inputs = {{"x", x}};
  m.outputs = {{"y", x * w1 + (batched ? w2.shrink({{0, 1}, {0, 3}}) : w2)}, {"z", w3.exp()}};
  if (batched) m.batch_dim = "N", m.batched_inputs = {true}, m.batched_outputs = {true, false};
  return m;
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A buffer of the description (tgc_buffer), by name.
struct DescBuffer {
  int32_t storage;
  int64_t offset, nbytes;
};

class EmitTest : public ::testing::Test {
 protected:
  EmitTest() { fs::create_directories(dir_); }
  ~EmitTest() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Emits the model as "tiny" for `target`, with launches for its kernels (CPU: symbols the
  // object references; GPU: placeholder blobs). Returns the weight bytes the emitter reports.
  int64_t emit(const std::string& target, bool shared, bool external_weights) {
    ResolvedTarget t = resolve_target(target, "", "");
    Graph& g = *model_.graph;
    Schedule s = schedule(g, model_.output_roots());
    MemoryPlan plan = plan_memory(g, s, t.desc->arena_alignment);
    ModelObject mo{model_, s, plan, t, {}, "tiny", shared, external_weights ? "tiny.weights" : ""};
    for (const Kernel& k : s.kernels) {
      KernelLaunch l;
      l.name = k.name;
      l.args = {k.output};
      l.args.insert(l.args.end(), k.inputs.begin(), k.inputs.end());
      if (t.desc->dialect == Dialect::LlvmCpu)
        l.cpu_symbol = "tiny_kernel_" + k.name;
      else
        l.blob = "__kernel void " + k.name + "() {}";
      mo.launches.push_back(l);
    }
    launches_ = mo.launches;
    external_ = external_weights;
    weights_section_ = arch_of(t.triple) == "x86_64" ? ".lrodata.tgc_weights" : ".rodata.tgc_weights";
    int64_t bytes = emit_model_object(mo, object_path(), weights_path());
    object_ = std::make_unique<test::EmittedObject>(object_path().string());
    return bytes;
  }

  fs::path object_path() const { return dir_ / "tiny.o"; }
  // The raw weights file (external), or the object defining tgc_weights_tiny (embedded).
  fs::path weights_path() const { return dir_ / "weights.bin"; }
  std::string weights_blob() const {
    if (external_) return file_bytes(weights_path());
    std::optional<std::string> blob = test::EmittedObject(weights_path().string()).section(weights_section_);
    return blob.value_or("");
  }
  const test::EmittedObject& obj() const { return *object_; }
  Place desc(const std::string& backend) const { return obj().description(backend, offsetof(tgc_model_desc, backend)); }

  std::map<std::string, DescBuffer> desc_buffers(Place d) const {
    std::map<std::string, DescBuffer> out;
    Place table = obj().points_to(d + offsetof(tgc_model_desc, buffers));
    for (int32_t i = 0; i < obj().read<int32_t>(d + offsetof(tgc_model_desc, num_buffers)); ++i) {
      Place b = table + uint64_t(i) * sizeof(tgc_buffer);
      out[obj().string_at(obj().points_to(b + offsetof(tgc_buffer, name)))] = {
          obj().read<int32_t>(b + offsetof(tgc_buffer, storage)), obj().read<int64_t>(b + offsetof(tgc_buffer, offset)),
          obj().read<int64_t>(b + offsetof(tgc_buffer, nbytes))};
    }
    return out;
  }

  // The weights file holds every weight of the description at its offset, 64-byte aligned and
  // packed: each starts at the first boundary after the one before.
  void expect_weights_at_described_offsets(Place d, int64_t reported) {
    std::string file = weights_blob();
    EXPECT_EQ(int64_t(file.size()), reported);
    EXPECT_EQ(obj().read<int64_t>(d + offsetof(tgc_model_desc, weights_size)), reported);
    std::vector<int64_t> offsets;
    int weights = 0;
    for (const auto& [name, b] : desc_buffers(d)) {
      if (b.storage != TGC_STORAGE_WEIGHT) continue;
      ++weights;
      offsets.push_back(b.offset);
      EXPECT_EQ(b.offset % 64, 0) << name;
      const Bytes& data = *graph_weight(name).data;
      ASSERT_EQ(b.nbytes, int64_t(data.size())) << name;
      ASSERT_LE(b.offset + b.nbytes, int64_t(file.size())) << name;
      EXPECT_EQ(file.substr(size_t(b.offset), size_t(b.nbytes)), std::string(data.begin(), data.end())) << name;
    }
    EXPECT_EQ(weights, 3);
    std::sort(offsets.begin(), offsets.end());
    EXPECT_EQ(offsets, (std::vector<int64_t>{0, 64, 128}));
  }

  const BufferInfo& graph_weight(const std::string& name) const {
    for (size_t i = 0; i < model_.graph->num_buffers(); ++i)
      if (model_.graph->buffer(int64_t(i)).name == name) return model_.graph->buffer(int64_t(i));
    throw std::runtime_error("no buffer " + name);
  }

  fs::path dir_ = fs::temp_directory_path() / ("tgc-emit-test-" + std::to_string(getpid()));
  Model model_ = tiny_model(false);
  std::vector<KernelLaunch> launches_;
  bool external_ = false;
  std::string weights_section_;
  std::unique_ptr<test::EmittedObject> object_;
};

TEST_F(EmitTest, ExecutableDefinesMainAndDescribesTheModelForTheCpuBackend) {
  emit("cpu", false, false);
  EXPECT_TRUE(obj().defines("main"));
  EXPECT_TRUE(obj().references("tgc_main"));
  EXPECT_FALSE(obj().defines("tiny_create"));
  EXPECT_TRUE(obj().references("tgc_backend_cpu"));
  EXPECT_FALSE(obj().references("tgc_backend_opencl"));
  Place d = desc("tgc_backend_cpu");
  EXPECT_EQ(obj().read<int32_t>(d + offsetof(tgc_model_desc, abi_version)), TGC_ABI_VERSION);
  EXPECT_EQ(obj().string_at(obj().points_to(d + offsetof(tgc_model_desc, name))), "tiny");
  ASSERT_EQ(obj().read<int32_t>(d + offsetof(tgc_model_desc, num_launches)), int32_t(launches_.size()));
  Place launches = obj().points_to(d + offsetof(tgc_model_desc, launches));
  for (size_t i = 0; i < launches_.size(); ++i) {
    std::optional<test::EmittedObject::Pointer> fn =
        obj().pointer(launches + i * sizeof(tgc_launch) + offsetof(tgc_launch, cpu_fn));
    ASSERT_TRUE(fn.has_value()) << "launch " << i << " has no kernel function";
    EXPECT_EQ(fn->symbol, launches_[i].cpu_symbol);
    EXPECT_TRUE(obj().references(launches_[i].cpu_symbol));
  }
  std::map<std::string, DescBuffer> bufs = desc_buffers(d);
  ASSERT_TRUE(bufs.count("x") && bufs.count("y") && bufs.count("z")) << "inputs and outputs go by the model's names";
  EXPECT_EQ(bufs.at("x").storage, TGC_STORAGE_INPUT);
  EXPECT_EQ(bufs.at("y").storage, TGC_STORAGE_OUTPUT);
  EXPECT_EQ(bufs.at("z").storage, TGC_STORAGE_OUTPUT);
}

TEST_F(EmitTest, SharedLibraryDefinesTheCApiInsteadOfMain) {
  emit("cpu", true, false);
  EXPECT_FALSE(obj().defines("main"));
  for (const char* fn : {"create", "destroy", "run", "input", "output", "last_error", "set_input_shape", "input_name",
                         "input_shape", "output_name", "output_shape"})
    EXPECT_TRUE(obj().defines(std::string("tiny_") + fn)) << fn;
  for (const char* fn : {"tgc_create", "tgc_destroy", "tgc_run", "tgc_input_data", "tgc_output_data", "tgc_last_error"})
    EXPECT_TRUE(obj().references(fn)) << fn;
  EXPECT_TRUE(obj().references("tgc_backend_cpu"));
}

// Embedded weights: the description points at the weights object's symbol, whose section holds
// the blob.
TEST_F(EmitTest, EmbeddedWeightsAreTheFileAtTheDescribedOffsets) {
  int64_t bytes = emit("cpu", false, false);
  EXPECT_EQ(bytes, 128 + 100);
  Place d = desc("tgc_backend_cpu");
  expect_weights_at_described_offsets(d, bytes);
  std::optional<test::EmittedObject::Pointer> w = obj().pointer(d + offsetof(tgc_model_desc, weights));
  ASSERT_TRUE(w.has_value()) << "embedded weights without a pointer to them";
  EXPECT_EQ(w->symbol, "tgc_weights_tiny");
  EXPECT_TRUE(obj().references("tgc_weights_tiny"));
  test::EmittedObject weights(weights_path().string());
  EXPECT_TRUE(weights.defines("tgc_weights_tiny"));
  EXPECT_TRUE(weights.section(weights_section_).has_value());
  EXPECT_FALSE(obj().pointer(d + offsetof(tgc_model_desc, weights_file)).has_value());
}

// External weights: the description names the file and the object carries no copy.
TEST_F(EmitTest, ExternalWeightsAreNamedNotEmbedded) {
  int64_t bytes = emit("cpu", true, true);
  Place d = desc("tgc_backend_cpu");
  expect_weights_at_described_offsets(d, bytes);
  EXPECT_FALSE(obj().pointer(d + offsetof(tgc_model_desc, weights)).has_value());
  EXPECT_EQ(obj().string_at(obj().points_to(d + offsetof(tgc_model_desc, weights_file))), "tiny.weights");
  EXPECT_FALSE(obj().defines("tgc_weights_tiny"));
  EXPECT_FALSE(obj().references("tgc_weights_tiny"));
}

// qcom: aarch64 host code, OpenCL backend, kernels carried as blobs of the given size.
TEST_F(EmitTest, OpenClModelCarriesBlobsForTheOpenClBackend) {
  int64_t bytes = emit("qcom", false, false);
  EXPECT_TRUE(obj().defines("main"));
  EXPECT_TRUE(obj().references("tgc_backend_opencl"));
  EXPECT_FALSE(obj().references("tgc_backend_cpu"));
  Place d = desc("tgc_backend_opencl");
  expect_weights_at_described_offsets(d, bytes);
  Place launches = obj().points_to(d + offsetof(tgc_model_desc, launches));
  for (size_t i = 0; i < launches_.size(); ++i) {
    Place l = launches + i * sizeof(tgc_launch);
    EXPECT_FALSE(obj().pointer(l + offsetof(tgc_launch, cpu_fn)).has_value());
    const std::string& blob = launches_[i].blob;
    ASSERT_EQ(obj().read<int64_t>(l + offsetof(tgc_launch, blob_size)), int64_t(blob.size()));
    Place at = obj().points_to(l + offsetof(tgc_launch, blob));
    EXPECT_EQ(obj().bytes_at(at, blob.size()), blob);
  }
}

TEST(CHeader, ListsABatchedInputWithTheBatchAsMinusOne) {
  Model m = tiny_model(true);
  std::string h = header_text("tiny", m);
  EXPECT_NE(h.find("from tiny.onnx"), std::string::npos) << h;
  EXPECT_NE(h.find("#ifndef TINY_H"), std::string::npos) << h;
  EXPECT_NE(h.find(" *   0: 'x' float[-1,3]\n"), std::string::npos) << h;
  EXPECT_NE(h.find(" *   0: 'y' float[-1,3]\n"), std::string::npos) << h;
  EXPECT_NE(h.find(" *   1: 'z' float[25]\n"), std::string::npos) << "an output without the batch keeps its shape\n"
                                                                  << h;
  EXPECT_NE(h.find("-1 is the batch size 'N', bound at run time by tiny_set_input_shape"), std::string::npos) << h;
  EXPECT_NE(h.find("tiny_NUM_INPUTS = 1, tiny_NUM_OUTPUTS = 2"), std::string::npos) << h;
  for (const char* decl : {"tiny_model* tiny_create(int num_threads);", "int tiny_run(tiny_model* m);",
                           "int tiny_set_input_shape(tiny_model* m, int index, int rank, const int64_t* dims);"})
    EXPECT_NE(h.find(decl), std::string::npos) << decl << "\n" << h;
}

TEST(CHeader, UnbatchedModelHasNoRunTimeDims) {
  std::string h = header_text("tiny", tiny_model(false));
  EXPECT_NE(h.find(" *   0: 'x' float[2,3]\n"), std::string::npos) << h;
  EXPECT_EQ(h.find("-1 is"), std::string::npos) << h;
}

}  // namespace
}  // namespace tgc
