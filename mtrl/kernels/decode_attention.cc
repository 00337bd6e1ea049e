// mtrl_decode_attention: one query per row over a head-first K/V cache, fused.
//
//   out[b, h, g] = sum_s p[b, h, g, s] v[b, h, s],
//   p = softmax over visible s < limit of (q[b, h, g] . k[b, h, s]) / sqrt(D)
//
// q [B, KV, G, D], k, v [B, KV, S, D], out [B, KV, G, D], all float32 or all bfloat16;
// mask [B, S] bool (True: may attend); limit [] int32: slots at or past it are never
// read (the cache's unwritten tail). A row with no visible key gets zeros. Scores,
// softmax and sums are float32; with bfloat16 inputs the probabilities are rounded to
// bfloat16 before the value product and the output is rounded once at the end, the
// order of mtrl.models.attention.grouped_attention (XLA's einsum path).
//
// Why: XLA:CPU runs the grouped decode einsum as B * KV tiny [G, D] x [D, S] dots and
// reads every slot of the cache, written or not. Here each (row, head) pair reads its
// keys and values once, up to `limit`, and the pairs run in parallel (OpenMP).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

inline float bf16_to_f32(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

inline uint16_t f32_to_bf16(float value) {  // round to nearest even, NaN kept NaN
  uint32_t word;
  std::memcpy(&word, &value, sizeof word);
  if ((word & 0x7fffffffu) > 0x7f800000u) return uint16_t((word >> 16) | 0x40u);
  word += 0x7fffu + ((word >> 16) & 1u);
  return uint16_t(word >> 16);
}

// exp(x) for x <= 0 (shifted scores), vectorizable: x = n ln2 + r, |r| <= ln2 / 2,
// exp(r) by Cephes' expf polynomial, 2^n by the exponent bits; relative error ~1e-7.
// Below -87 it returns exp(-87) ~ 1.6e-38 where libm underflows toward 0 (a visible key's
// weight off by < 1e-37 of a sum >= 1; masked keys are zeroed after).
inline float exp_nonpositive(float x) {
  x = x < -87.0f ? -87.0f : x;
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const uint32_t bits = uint32_t(int32_t(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// Cached rows as float32: float32 rows are read in place, bfloat16 rows widened into buf.
inline const float* rows_f32(const float* src, int64_t, float*) { return src; }

inline const float* rows_f32(const uint16_t* src, int64_t count, float* buf) {
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) buf[i] = bf16_to_f32(src[i]);
  return buf;
}

inline void store_row(const float* src, int64_t d, float* dst) {
  std::memcpy(dst, src, d * sizeof(float));
}

inline void store_row(const float* src, int64_t d, uint16_t* dst) {
  for (int64_t i = 0; i < d; ++i) dst[i] = f32_to_bf16(src[i]);
}

inline float round_prob(float p, const float*) { return p; }
inline float round_prob(float p, const uint16_t*) { return bf16_to_f32(f32_to_bf16(p)); }

// Keys per block: a block's rows (<= 64 x 256 floats) stay in cache while the G queries
// of a pair pass over them.
constexpr int64_t kBlock = 64;

// One (row, head) pair: g queries against n cached slots. kD is the head size when
// known at compile time (the loops over it then unroll into registers), 0 otherwise.
template <int64_t kD, typename T>
void attend(const T* q, const T* k, const T* v, const bool* mask, int64_t g, int64_t n,
            int64_t dim, float scale, T* out, std::vector<float>& scratch) {
  const int64_t d = kD ? kD : dim;
  scratch.resize(size_t(g * d + kBlock * d + g * n + g * d));
  float* qf = scratch.data();           // [g, d]
  float* block = qf + g * d;            // [kBlock, d] widened rows (bfloat16 only)
  float* scores = block + kBlock * d;   // [g, n]
  float* acc = scores + g * n;          // [g, d]
  const float lowest = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < g; ++j) std::memcpy(qf + j * d, rows_f32(q + j * d, d, block), d * 4);
  bool any = false;
  for (int64_t s = 0; s < n; ++s) any = any || mask[s];
  std::memset(acc, 0, size_t(g * d) * sizeof(float));
  if (!any) {
    for (int64_t j = 0; j < g; ++j) store_row(acc + j * d, d, out + j * d);
    return;
  }
  for (int64_t start = 0; start < n; start += kBlock) {  // scores = q k^T / sqrt(d)
    const int64_t count = n - start < kBlock ? n - start : kBlock;
    const float* keys = rows_f32(k + start * d, count * d, block);
    for (int64_t j = 0; j < g; ++j) {
      const float* qj = qf + j * d;
      float* sj = scores + j * n + start;
      for (int64_t s = 0; s < count; ++s) {
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int64_t i = 0; i < d; ++i) dot += qj[i] * keys[s * d + i];
        sj[s] = mask[start + s] ? dot * scale : lowest;
      }
    }
  }
  for (int64_t j = 0; j < g; ++j) {  // softmax over the visible slots
    float* sj = scores + j * n;
    float top = lowest;
    for (int64_t s = 0; s < n; ++s) top = sj[s] > top ? sj[s] : top;
    float total = 0.0f;
#pragma omp simd reduction(+ : total)
    for (int64_t s = 0; s < n; ++s) {
      const float e = exp_nonpositive(sj[s] - top);
      sj[s] = sj[s] == lowest ? 0.0f : e;
      total += sj[s];
    }
#pragma omp simd
    for (int64_t s = 0; s < n; ++s) sj[s] = round_prob(sj[s] / total, q);
  }
  for (int64_t start = 0; start < n; start += kBlock) {  // out = p v
    const int64_t count = n - start < kBlock ? n - start : kBlock;
    const float* values = rows_f32(v + start * d, count * d, block);
    for (int64_t j = 0; j < g; ++j) {
      const float* pj = scores + j * n + start;
      float sum[kD ? kD : 1];
      float* a = kD ? sum : acc + j * d;
      if (kD) std::memcpy(a, acc + j * d, d * sizeof(float));
      for (int64_t s = 0; s < count; ++s) {
        if (!mask[start + s]) continue;  // never 0 * an unwritten value
        const float p = pj[s];
#pragma omp simd
        for (int64_t i = 0; i < d; ++i) a[i] += p * values[s * d + i];
      }
      if (kD) std::memcpy(acc + j * d, a, d * sizeof(float));
    }
  }
  for (int64_t j = 0; j < g; ++j) store_row(acc + j * d, d, out + j * d);
}

template <typename T>
void attend_any(const T* q, const T* k, const T* v, const bool* mask, int64_t g, int64_t n,
                int64_t d, float scale, T* out, std::vector<float>& scratch) {
  switch (d) {  // the head sizes of the supported families
    case 64: return attend<64>(q, k, v, mask, g, n, d, scale, out, scratch);
    case 128: return attend<128>(q, k, v, mask, g, n, d, scale, out, scratch);
    default: return attend<0>(q, k, v, mask, g, n, d, scale, out, scratch);
  }
}

template <typename T>
void run(const T* q, const T* k, const T* v, const bool* mask, int64_t b, int64_t h,
         int64_t g, int64_t s, int64_t d, int64_t n, T* out) {
  const float scale = 1.0f / std::sqrt(float(d));
#pragma omp parallel
  {
    std::vector<float> scratch;
#pragma omp for schedule(static)
    for (int64_t pair = 0; pair < b * h; ++pair) {
      const int64_t row = pair / h;
      attend_any(q + pair * g * d, k + pair * s * d, v + pair * s * d, mask + row * s, g, n, d,
             scale, out + pair * g * d, scratch);
    }
  }
}

ffi::Error DecodeAttention(ffi::AnyBuffer q, ffi::AnyBuffer k, ffi::AnyBuffer v,
                           ffi::Buffer<ffi::PRED> mask, ffi::Buffer<ffi::S32> limit,
                           ffi::Result<ffi::AnyBuffer> out) {
  auto qd = q.dimensions(), kd = k.dimensions(), md = mask.dimensions();
  if (qd.size() != 4 || kd.size() != 4 || md.size() != 2)
    return ffi::Error::InvalidArgument("mtrl_decode_attention: q, k, v 4-D and mask 2-D");
  const int64_t b = qd[0], h = qd[1], g = qd[2], d = qd[3], s = kd[2];
  if (kd[0] != b || kd[1] != h || kd[3] != d || md[0] != b || md[1] != s)
    return ffi::Error::InvalidArgument("mtrl_decode_attention: shapes do not match");
  const auto type = q.element_type();
  if (k.element_type() != type || v.element_type() != type || out->element_type() != type)
    return ffi::Error::InvalidArgument("mtrl_decode_attention: q, k, v, out differ in dtype");
  int64_t n = limit.typed_data()[0];
  n = n < 0 ? 0 : (n > s ? s : n);
  const bool* m = mask.typed_data();
  if (type == ffi::DataType::F32) {
    run(static_cast<const float*>(q.untyped_data()), static_cast<const float*>(k.untyped_data()),
        static_cast<const float*>(v.untyped_data()), m, b, h, g, s, d, n,
        static_cast<float*>(out->untyped_data()));
  } else if (type == ffi::DataType::BF16) {
    run(static_cast<const uint16_t*>(q.untyped_data()),
        static_cast<const uint16_t*>(k.untyped_data()),
        static_cast<const uint16_t*>(v.untyped_data()), m, b, h, g, s, d, n,
        static_cast<uint16_t*>(out->untyped_data()));
  } else {
    return ffi::Error::InvalidArgument("mtrl_decode_attention: float32 or bfloat16 only");
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(MtrlDecodeAttention, DecodeAttention,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Buffer<ffi::PRED>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::AnyBuffer>());
