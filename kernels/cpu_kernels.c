/* hetrt's CPU kernel set, in the packed-function ABI (float32, NCHW):
 * add, mul, relu, dense (+bias), softmax, conv2d (+bias, stride 1, padding
 * from the shapes), max-pool (window and stride from the shapes). Dense and
 * conv2d split their work with the runtime's parallel launch. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "kernel_abi.h"

/* Exported (default visibility) so the loader can find and fill them. */
#define HK_BACKEND_VAR __attribute__((weak, visibility("default")))
HK_BACKEND_VAR void* __tvm_module_ctx = 0;
HK_BACKEND_VAR void (*__TVMAPISetLastError)(const char*) = 0;
HK_BACKEND_VAR int (*__TVMBackendGetFuncFromEnv)(void*, const char*, void**) = 0;
HK_BACKEND_VAR int (*__TVMFuncCall)(void*, hk_value_t*, int*, int, hk_value_t*, int*) = 0;
HK_BACKEND_VAR int (*__TVMBackendParallelLaunch)(hk_parallel_lambda_t, void*, int) = 0;

int hk_fail(const char* kernel, const char* message) {
  char buf[256];
  strncpy(buf, kernel, sizeof buf - 1);
  buf[sizeof buf - 1] = 0;
  strncat(buf, ": ", sizeof buf - strlen(buf) - 1);
  strncat(buf, message, sizeof buf - strlen(buf) - 1);
  if (__TVMAPISetLastError) __TVMAPISetLastError(buf);
  return -1;
}

int64_t hk_numel(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

int hk_check_tensors(const char* kernel, hk_value_t* args, int32_t* codes, int32_t num_args, int expected,
                     int device_type) {
  if (num_args != expected) return hk_fail(kernel, "wrong number of arguments");
  for (int i = 0; i < num_args; ++i) {
    const DLTensor* t = (const DLTensor*)args[i].v_handle;
    if (codes[i] != 7 || t == 0 || t->data == 0) return hk_fail(kernel, "arguments must be DLTensors");
    if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1)
      return hk_fail(kernel, "only float32 is supported");
    if ((int)t->device.device_type != device_type) return hk_fail(kernel, "tensor on the wrong device");
  }
  return 0;
}

#define T(i) ((DLTensor*)args[i].v_handle)
#define F(i) ((float*)T(i)->data)

/* Runs body(task, tasks, cdata) over the runtime's pool (serially without one). */
static int hk_parallel(hk_parallel_lambda_t body, void* cdata) {
  if (__TVMBackendParallelLaunch) return __TVMBackendParallelLaunch(body, cdata, 0);
  hk_parallel_env_t env = {0, 1};
  return body(0, &env, cdata);
}

static int elementwise(const char* name, hk_value_t* args, int32_t* codes, int32_t n, int op) {
  if (hk_check_tensors(name, args, codes, n, 3, kDLCPU)) return -1;
  const int64_t count = hk_numel(T(2));
  if (hk_numel(T(0)) != count || hk_numel(T(1)) != count) return hk_fail(name, "shapes differ");
  const float *a = F(0), *b = F(1);
  float* y = F(2);
  for (int64_t i = 0; i < count; ++i) y[i] = op == 0 ? a[i] + b[i] : a[i] * b[i];
  return 0;
}

HK_KERNEL(hetrt_add) { return elementwise("hetrt_add", args, codes, num_args, 0); }
HK_KERNEL(hetrt_mul) { return elementwise("hetrt_mul", args, codes, num_args, 1); }

HK_KERNEL(hetrt_relu) {
  if (hk_check_tensors("hetrt_relu", args, codes, num_args, 2, kDLCPU)) return -1;
  const int64_t count = hk_numel(T(1));
  if (hk_numel(T(0)) != count) return hk_fail("hetrt_relu", "shapes differ");
  const float* x = F(0);
  float* y = F(1);
  for (int64_t i = 0; i < count; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
  return 0;
}

/* dense: x [N, K] (any shape with N rows), w [M, K], b [M] -> y [N, M]. */
typedef struct {
  const float *x, *w, *b;
  float* y;
  int64_t n, k, m;
} dense_args_t;

static int dense_task(int task, hk_parallel_env_t* env, void* cdata) {
  const dense_args_t* d = (const dense_args_t*)cdata;
  const int64_t rows = d->n * d->m;
  const int64_t per = (rows + env->num_task - 1) / env->num_task;
  const int64_t end = (task + 1) * per < rows ? (task + 1) * per : rows;
  for (int64_t r = task * per; r < end; ++r) {
    const int64_t i = r / d->m, j = r % d->m;
    const float* xi = d->x + i * d->k;
    const float* wj = d->w + j * d->k;
    float acc = d->b ? d->b[j] : 0.f;
    for (int64_t t = 0; t < d->k; ++t) acc += xi[t] * wj[t];
    d->y[r] = acc;
  }
  return 0;
}

HK_KERNEL(hetrt_dense) {
  if (hk_check_tensors("hetrt_dense", args, codes, num_args, 4, kDLCPU)) return -1;
  dense_args_t d = {F(0), F(1), F(2), F(3), T(3)->shape[0], 0, T(1)->shape[0]};
  if (T(1)->ndim != 2 || T(3)->ndim != 2) return hk_fail("hetrt_dense", "weight and output must be 2-D");
  d.k = T(1)->shape[1];
  if (hk_numel(T(0)) != d.n * d.k || hk_numel(T(2)) != d.m || T(3)->shape[1] != d.m)
    return hk_fail("hetrt_dense", "shapes do not agree (x [N,K], w [M,K], b [M], y [N,M])");
  return hk_parallel(dense_task, &d);
}

/* softmax over the last axis. */
HK_KERNEL(hetrt_softmax) {
  if (hk_check_tensors("hetrt_softmax", args, codes, num_args, 2, kDLCPU)) return -1;
  const int64_t c = T(1)->shape[T(1)->ndim - 1], rows = hk_numel(T(1)) / c;
  if (hk_numel(T(0)) != rows * c) return hk_fail("hetrt_softmax", "shapes differ");
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = F(0) + r * c;
    float* y = F(1) + r * c;
    float mx = -FLT_MAX, sum = 0.f;
    for (int64_t i = 0; i < c; ++i) mx = x[i] > mx ? x[i] : mx;
    for (int64_t i = 0; i < c; ++i) sum += (y[i] = expf(x[i] - mx));
    for (int64_t i = 0; i < c; ++i) y[i] /= sum;
  }
  return 0;
}

/* conv2d NCHW: x [N,C,H,W], w [O,C,KH,KW], b [O] -> y [N,O,OH,OW]; stride 1,
 * symmetric zero padding p = (OH - H + KH - 1) / 2. */
typedef struct {
  const float *x, *w, *b;
  float* y;
  int64_t n, c, h, wd, o, kh, kw, oh, ow, pad;
} conv_args_t;

static int conv_task(int task, hk_parallel_env_t* env, void* cdata) {
  const conv_args_t* a = (const conv_args_t*)cdata;
  const int64_t planes = a->n * a->o;
  for (int64_t p = task; p < planes; p += env->num_task) {
    const int64_t n = p / a->o, o = p % a->o;
    float* y = a->y + p * a->oh * a->ow;
    for (int64_t i = 0; i < a->oh; ++i)
      for (int64_t j = 0; j < a->ow; ++j) {
        float acc = a->b[o];
        for (int64_t c = 0; c < a->c; ++c)
          for (int64_t u = 0; u < a->kh; ++u) {
            const int64_t yy = i + u - a->pad;
            if (yy < 0 || yy >= a->h) continue;
            for (int64_t v = 0; v < a->kw; ++v) {
              const int64_t xx = j + v - a->pad;
              if (xx < 0 || xx >= a->wd) continue;
              acc += a->x[((n * a->c + c) * a->h + yy) * a->wd + xx] * a->w[((o * a->c + c) * a->kh + u) * a->kw + v];
            }
          }
        y[i * a->ow + j] = acc;
      }
  }
  return 0;
}

HK_KERNEL(hetrt_conv2d) {
  if (hk_check_tensors("hetrt_conv2d", args, codes, num_args, 4, kDLCPU)) return -1;
  if (T(0)->ndim != 4 || T(1)->ndim != 4 || T(3)->ndim != 4) return hk_fail("hetrt_conv2d", "x, w and y must be 4-D (NCHW)");
  conv_args_t a = {F(0), F(1), F(2), F(3), T(0)->shape[0], T(0)->shape[1], T(0)->shape[2], T(0)->shape[3],
                   T(1)->shape[0], T(1)->shape[2], T(1)->shape[3], T(3)->shape[2], T(3)->shape[3], 0};
  a.pad = (a.oh - a.h + a.kh - 1) / 2;
  if (T(1)->shape[1] != a.c || T(3)->shape[1] != a.o || hk_numel(T(2)) != a.o || a.pad < 0)
    return hk_fail("hetrt_conv2d", "shapes do not agree (x [N,C,H,W], w [O,C,KH,KW], b [O], y [N,O,OH,OW])");
  return hk_parallel(conv_task, &a);
}

/* max-pool NCHW: window = stride = H / OH (and W / OW). */
HK_KERNEL(hetrt_maxpool) {
  if (hk_check_tensors("hetrt_maxpool", args, codes, num_args, 2, kDLCPU)) return -1;
  if (T(0)->ndim != 4 || T(1)->ndim != 4) return hk_fail("hetrt_maxpool", "x and y must be 4-D (NCHW)");
  const int64_t planes = T(0)->shape[0] * T(0)->shape[1], h = T(0)->shape[2], w = T(0)->shape[3];
  const int64_t oh = T(1)->shape[2], ow = T(1)->shape[3];
  if (oh == 0 || ow == 0 || h % oh || w % ow || hk_numel(T(1)) != planes * oh * ow)
    return hk_fail("hetrt_maxpool", "output must divide the input evenly");
  const int64_t sh = h / oh, sw = w / ow;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        float m = -FLT_MAX;
        for (int64_t u = 0; u < sh; ++u)
          for (int64_t v = 0; v < sw; ++v) {
            const float x = F(0)[(p * h + i * sh + u) * w + j * sw + v];
            m = x > m ? x : m;
          }
        F(1)[(p * oh + i) * ow + j] = m;
      }
  return 0;
}
