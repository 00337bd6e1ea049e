// mtrl_onednn_matmul: an XLA:CPU FFI custom call into oneDNN's matmul primitive.
//
//   out[M, N] (float32) = op(a) @ op(b),  a, b bfloat16 (row-major),
//   op(a) = a [M, K] or, with transpose_a, a^T where a is [K, M];
//   op(b) = b [K, N] or, with transpose_b, b^T where b is [N, K].
//
// oneDNN picks its kernel for the CPU it runs on (AMX tiles where the CPU has
// amx_bf16, AVX-512 BF16 or emulation elsewhere) and accumulates in float32.
// Transposes are strides (format tag "ba"), never copies made here. One primitive
// per shape is created once and kept (creating one JIT-compiles a kernel).
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "oneapi/dnnl/dnnl.hpp"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool>;

struct Context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::mutex mutex;
  std::map<Key, dnnl::matmul> primitives;
};

Context& context() {
  static Context* ctx = new Context();  // never destroyed: outlives XLA's threads
  return *ctx;
}

dnnl::memory::desc matrix(int64_t rows, int64_t cols, bool transposed,
                          dnnl::memory::data_type type) {
  using tag = dnnl::memory::format_tag;
  return dnnl::memory::desc({rows, cols}, type, transposed ? tag::ba : tag::ab);
}

ffi::Error Matmul(ffi::Buffer<ffi::BF16> a, ffi::Buffer<ffi::BF16> b,
                  ffi::ResultBuffer<ffi::F32> out, bool transpose_a, bool transpose_b) {
  auto ad = a.dimensions(), bd = b.dimensions(), od = out->dimensions();
  if (ad.size() != 2 || bd.size() != 2 || od.size() != 2)
    return ffi::Error::InvalidArgument("mtrl_onednn_matmul takes 2-D operands");
  int64_t m = transpose_a ? ad[1] : ad[0], k = transpose_a ? ad[0] : ad[1];
  int64_t kb = transpose_b ? bd[1] : bd[0], n = transpose_b ? bd[0] : bd[1];
  if (k != kb || od[0] != m || od[1] != n)
    return ffi::Error::InvalidArgument("mtrl_onednn_matmul: shapes do not chain");
  if (m == 0 || n == 0) return ffi::Error::Success();
  using dt = dnnl::memory::data_type;
  Context& ctx = context();
  auto a_desc = matrix(m, k, transpose_a, dt::bf16);
  auto b_desc = matrix(k, n, transpose_b, dt::bf16);
  auto o_desc = matrix(m, n, false, dt::f32);
  try {
    dnnl::matmul primitive;
    {
      std::lock_guard<std::mutex> lock(ctx.mutex);
      Key key{m, k, n, transpose_a, transpose_b};
      auto found = ctx.primitives.find(key);
      if (found == ctx.primitives.end()) {
        auto pd = dnnl::matmul::primitive_desc(ctx.engine, a_desc, b_desc, o_desc);
        found = ctx.primitives.emplace(key, dnnl::matmul(pd)).first;
      }
      primitive = found->second;
    }
    if (k == 0) {  // an empty contraction: oneDNN is not asked to sum nothing
      float* o = out->typed_data();
      for (int64_t i = 0; i < m * n; ++i) o[i] = 0.0f;
      return ffi::Error::Success();
    }
    dnnl::memory am(a_desc, ctx.engine, a.untyped_data());
    dnnl::memory bm(b_desc, ctx.engine, b.untyped_data());
    dnnl::memory om(o_desc, ctx.engine, out->untyped_data());
    // A stream per call: oneDNN streams are not safe to share between XLA's threads.
    dnnl::stream stream(ctx.engine);
    primitive.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, om}});
    stream.wait();
  } catch (const dnnl::error& e) {
    return ffi::Error::Internal(std::string("oneDNN: ") + e.what());
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(MtrlOnednnMatmul, Matmul,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::BF16>>()
                                  .Arg<ffi::Buffer<ffi::BF16>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<bool>("transpose_a")
                                  .Attr<bool>("transpose_b"));

// The oneDNN kernel a shape would run (e.g. "brg:avx512_core_amx"), for the printed choice.
extern "C" const char* mtrl_onednn_impl_info(int64_t m, int64_t k, int64_t n) {
  static thread_local std::string info;
  try {
    using dt = dnnl::memory::data_type;
    Context& ctx = context();
    auto pd = dnnl::matmul::primitive_desc(ctx.engine, matrix(m, k, false, dt::bf16),
                                           matrix(k, n, false, dt::bf16),
                                           matrix(m, n, false, dt::f32));
    info = pd.impl_info_str();
  } catch (const dnnl::error& e) {
    info = std::string("error: ") + e.what();
  }
  return info.c_str();
}
