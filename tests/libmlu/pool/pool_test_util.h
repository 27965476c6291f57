// Naive references for the pooling tests, written from torch's CPU kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "mlusim/mlu/pool.h"

namespace mlusim::mlu::testing {

struct PlaneDims {
  std::int64_t planes, h, w, oh, ow;
};

// max_pool2d_with_indices: values and flat indices (ih * W + iw) per output, planes outermost.
inline void ref_max_pool(const std::vector<float>& x, const PlaneDims& d, const Pool2dParams& p, std::vector<double>* y,
                         std::vector<std::int64_t>* idx) {
  y->clear(), idx->clear();
  for (std::int64_t c = 0; c < d.planes; ++c)
    for (std::int64_t i = 0; i < d.oh; ++i)
      for (std::int64_t j = 0; j < d.ow; ++j) {
        std::int64_t hs = i * p.stride_h - p.pad_h, ws = j * p.stride_w - p.pad_w;
        const std::int64_t he = std::min(hs + (p.kernel_h - 1) * p.dilation_h + 1, d.h);
        const std::int64_t we = std::min(ws + (p.kernel_w - 1) * p.dilation_w + 1, d.w);
        while (hs < 0) hs += p.dilation_h;
        while (ws < 0) ws += p.dilation_w;
        std::int64_t best_i = hs * d.w + ws;
        double best = -std::numeric_limits<double>::infinity();
        for (std::int64_t ih = hs; ih < he; ih += p.dilation_h)
          for (std::int64_t iw = ws; iw < we; iw += p.dilation_w) {
            const double v = x[(c * d.h + ih) * d.w + iw];
            if (v > best || std::isnan(v)) best = v, best_i = ih * d.w + iw;
          }
        y->push_back(best);
        idx->push_back(best_i);
      }
}

// avg_pool2d.
inline std::vector<double> ref_avg_pool(const std::vector<float>& x, const PlaneDims& d, const Pool2dParams& p) {
  std::vector<double> y;
  for (std::int64_t c = 0; c < d.planes; ++c)
    for (std::int64_t i = 0; i < d.oh; ++i)
      for (std::int64_t j = 0; j < d.ow; ++j) {
        std::int64_t hs = i * p.stride_h - p.pad_h, ws = j * p.stride_w - p.pad_w;
        std::int64_t he = std::min(hs + p.kernel_h, d.h + p.pad_h), we = std::min(ws + p.kernel_w, d.w + p.pad_w);
        const std::int64_t pool = (he - hs) * (we - ws);
        hs = std::max<std::int64_t>(hs, 0), ws = std::max<std::int64_t>(ws, 0);
        he = std::min(he, d.h), we = std::min(we, d.w);
        double sum = 0;
        for (std::int64_t ih = hs; ih < he; ++ih)
          for (std::int64_t iw = ws; iw < we; ++iw) sum += x[(c * d.h + ih) * d.w + iw];
        const double div = p.divisor_override    ? double(p.divisor_override)
                           : p.count_include_pad ? double(pool)
                                                 : double((he - hs) * (we - ws));
        y.push_back(sum / div);
      }
  return y;
}

// avg_pool2d backward: each output's gradient / divisor spread over its clipped window.
inline std::vector<double> ref_avg_pool_backward(const std::vector<float>& g, const PlaneDims& d,
                                                 const Pool2dParams& p) {
  std::vector<double> gx(d.planes * d.h * d.w, 0.0);
  for (std::int64_t c = 0; c < d.planes; ++c)
    for (std::int64_t i = 0; i < d.oh; ++i)
      for (std::int64_t j = 0; j < d.ow; ++j) {
        std::int64_t hs = i * p.stride_h - p.pad_h, ws = j * p.stride_w - p.pad_w;
        std::int64_t he = std::min(hs + p.kernel_h, d.h + p.pad_h), we = std::min(ws + p.kernel_w, d.w + p.pad_w);
        const std::int64_t pool = (he - hs) * (we - ws);
        hs = std::max<std::int64_t>(hs, 0), ws = std::max<std::int64_t>(ws, 0);
        he = std::min(he, d.h), we = std::min(we, d.w);
        const double div = p.divisor_override    ? double(p.divisor_override)
                           : p.count_include_pad ? double(pool)
                                                 : double((he - hs) * (we - ws));
        const double v = g[(c * d.oh + i) * d.ow + j] / div;
        for (std::int64_t ih = hs; ih < he; ++ih)
          for (std::int64_t iw = ws; iw < we; ++iw) gx[(c * d.h + ih) * d.w + iw] += v;
      }
  return gx;
}

// adaptive_avg_pool2d bins: [floor(i*in/out), ceil((i+1)*in/out)).
inline std::int64_t bin_start(std::int64_t i, std::int64_t in, std::int64_t out) { return i * in / out; }
inline std::int64_t bin_end(std::int64_t i, std::int64_t in, std::int64_t out) {
  return ((i + 1) * in + out - 1) / out;
}

inline std::vector<double> ref_adaptive(const std::vector<float>& x, const PlaneDims& d) {
  std::vector<double> y;
  for (std::int64_t c = 0; c < d.planes; ++c)
    for (std::int64_t i = 0; i < d.oh; ++i)
      for (std::int64_t j = 0; j < d.ow; ++j) {
        const std::int64_t hs = bin_start(i, d.h, d.oh), he = bin_end(i, d.h, d.oh);
        const std::int64_t ws = bin_start(j, d.w, d.ow), we = bin_end(j, d.w, d.ow);
        double sum = 0;
        for (std::int64_t ih = hs; ih < he; ++ih)
          for (std::int64_t iw = ws; iw < we; ++iw) sum += x[(c * d.h + ih) * d.w + iw];
        y.push_back(sum / double((he - hs) * (we - ws)));
      }
  return y;
}

inline std::vector<double> ref_adaptive_backward(const std::vector<float>& g, const PlaneDims& d) {
  std::vector<double> gx(d.planes * d.h * d.w, 0.0);
  for (std::int64_t c = 0; c < d.planes; ++c)
    for (std::int64_t i = 0; i < d.oh; ++i)
      for (std::int64_t j = 0; j < d.ow; ++j) {
        const std::int64_t hs = bin_start(i, d.h, d.oh), he = bin_end(i, d.h, d.oh);
        const std::int64_t ws = bin_start(j, d.w, d.ow), we = bin_end(j, d.w, d.ow);
        const double v = g[(c * d.oh + i) * d.ow + j] / double((he - hs) * (we - ws));
        for (std::int64_t ih = hs; ih < he; ++ih)
          for (std::int64_t iw = ws; iw < we; ++iw) gx[(c * d.h + ih) * d.w + iw] += v;
      }
  return gx;
}

}  // namespace mlusim::mlu::testing
