// Decode-shaped bf16 matmuls on oneDNN 3.2, called directly: the weights as mtrl's
// kernel passes them (plain "ab", or "ba" for the tied output layer) against weights
// reordered once into the primitive's own blocked layout (format "any"; BENCHMARKS.md,
// "Matmul units"). Times one [M, K] @ [K, N] call (the mean of 200 calls at
// <= 8 rows, 50 above, a tenth of that for the output layer) on one matrix that stays
// in cache between calls.
//
//   V=.venv; g++ -O2 -std=c++17 -I$V/include bench/onednn_layouts.cc \
//       -L$V/lib -l:libdnnl.so.3 -Wl,-rpath,$V/lib -o /tmp/bench_onednn && /tmp/bench_onednn
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
#include "oneapi/dnnl/dnnl.hpp"
using namespace dnnl;
using dt = memory::data_type;
using tag = memory::format_tag;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char** argv) {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  int shapes[][2] = {{576, 1536}, {1536, 576}, {576, 576}, {576, 49152}};
  int ms[] = {1, 8, 32, 128};
  for (auto& kn : shapes) {
    int64_t k = kn[0], n = kn[1];
    for (int m : ms) {
      memory::desc a_d({m, k}, dt::bf16, tag::ab), o_d({m, n}, dt::f32, tag::ab);
      memory::desc b_plain({k, n}, dt::bf16, tag::ab);
      memory::desc b_tr({k, n}, dt::bf16, tag::ba);  // weights stored [N, K]
      memory::desc b_any({k, n}, dt::bf16, tag::any);
      std::vector<uint16_t> a(m * k, 0x3f80), b(k * n, 0x3c00);
      std::vector<float> o(m * n);
      memory am(a_d, eng, a.data()), om(o_d, eng, o.data());
      auto run = [&](matmul::primitive_desc pd, memory bm, const char* name) {
        matmul p(pd);
        for (int i = 0; i < 3; i++) { p.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, om}}); s.wait(); }
        int reps = m <= 8 ? 200 : 50;
        if (n > 10000) reps /= 10;
        double t0 = now();
        for (int i = 0; i < reps; i++) { p.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, om}}); s.wait(); }
        double dt_ = (now() - t0) / reps;
        double gbs = (k * n * 2.0) / dt_ / 1e9, gf = 2.0 * m * k * n / dt_ / 1e9;
        printf("k=%5ld n=%6ld m=%4d %-8s %9.1f us  %6.1f GB/s(weights)  %7.1f GFLOP/s  %s\n", k, n, m, name,
               dt_ * 1e6, gbs, gf, pd.impl_info_str());
      };
      memory bp(b_plain, eng, b.data());
      run(matmul::primitive_desc(eng, a_d, b_plain, o_d), bp, "ab");
      memory bt(b_tr, eng, b.data());
      run(matmul::primitive_desc(eng, a_d, b_tr, o_d), bt, "ba");
      auto pd_any = matmul::primitive_desc(eng, a_d, b_any, o_d);
      memory packed(pd_any.weights_desc(), eng);
      reorder(bp, packed).execute(s, bp, packed); s.wait();
      run(pd_any, packed, "packed");
    }
  }
}
