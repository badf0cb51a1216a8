/* Shape checks and launches of hetrt's accelerator kernels (accel_host.h). */
#include "accel_host.h"

enum { kThreads = 64 };

/* `kargs` holds the kernel arguments; the two launch extents are appended. */
static int launch(hk_accel_fn* fn, const DLTensor* on, hk_value_t* kargs, int* kcodes, int nk, int64_t work) {
  /* Function handles are looked up once and cached, as TVM's host code does;
   * atomically here, since executors on several threads share the library. */
  static void* cached_set_device;
  hk_value_t r;
  int rc;
  if (!__TVMBackendGetFuncFromEnv || !__TVMFuncCall) return hk_fail(fn->name, "library not loaded by a runtime");
  void* set_device = __atomic_load_n(&cached_set_device, __ATOMIC_ACQUIRE);
  if (!set_device) {
    if (__TVMBackendGetFuncFromEnv(__tvm_module_ctx, "__tvm_set_device", &set_device)) return -1;
    __atomic_store_n(&cached_set_device, set_device, __ATOMIC_RELEASE);
  }
  hk_value_t dev[2];
  dev[0].v_int64 = fn->device_type;
  dev[1].v_int64 = on->device.device_id;
  int dev_codes[2] = {0, 0};
  if (__TVMFuncCall(set_device, dev, dev_codes, 2, &r, &rc)) return -1;
  void* kernel = __atomic_load_n(&fn->cached, __ATOMIC_ACQUIRE);
  if (!kernel) {
    if (__TVMBackendGetFuncFromEnv(__tvm_module_ctx, fn->kernel, &kernel)) return -1;
    __atomic_store_n(&fn->cached, kernel, __ATOMIC_RELEASE);
  }
  int64_t blocks = (work + kThreads - 1) / kThreads;
  if (fn->max_blocks > 0 && blocks > fn->max_blocks) blocks = fn->max_blocks;
  kargs[nk].v_int64 = blocks > 0 ? blocks : 1; /* blockIdx.x */
  kargs[nk + 1].v_int64 = kThreads;            /* threadIdx.x */
  kcodes[nk] = kcodes[nk + 1] = 0;
  return __TVMFuncCall(kernel, kargs, kcodes, nk + 2, &r, &rc);
}

#define T(i) ((DLTensor*)args[i].v_handle)
#define BUF(k, i) (kargs[k].v_handle = T(i)->data, kcodes[k] = 3)
#define INT(k, v) (kargs[k].v_int64 = (v), kcodes[k] = 0)

static int binary(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t n) {
  if (hk_check_tensors(fn->name, args, codes, n, 3, fn->device_type)) return -1;
  const int64_t count = hk_numel(T(2));
  if (hk_numel(T(0)) != count || hk_numel(T(1)) != count) return hk_fail(fn->name, "shapes differ");
  hk_value_t kargs[6];
  int kcodes[6];
  BUF(0, 0), BUF(1, 1), BUF(2, 2), INT(3, count);
  return launch(fn, T(2), kargs, kcodes, 4, count);
}

int hk_accel_add(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t n) { return binary(fn, args, codes, n); }
int hk_accel_mul(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t n) { return binary(fn, args, codes, n); }

int hk_accel_relu(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t n) {
  if (hk_check_tensors(fn->name, args, codes, n, 2, fn->device_type)) return -1;
  const int64_t count = hk_numel(T(1));
  if (hk_numel(T(0)) != count) return hk_fail(fn->name, "shapes differ");
  hk_value_t kargs[5];
  int kcodes[5];
  BUF(0, 0), BUF(1, 1), INT(2, count);
  return launch(fn, T(1), kargs, kcodes, 3, count);
}

int hk_accel_dense(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t num_args) {
  if (hk_check_tensors(fn->name, args, codes, num_args, 4, fn->device_type)) return -1;
  if (T(1)->ndim != 2 || T(3)->ndim != 2) return hk_fail(fn->name, "weight and output must be 2-D");
  const int64_t n = T(3)->shape[0], m = T(1)->shape[0], kk = T(1)->shape[1];
  if (hk_numel(T(0)) != n * kk || hk_numel(T(2)) != m || T(3)->shape[1] != m)
    return hk_fail(fn->name, "shapes do not agree (x [N,K], w [M,K], b [M], y [N,M])");
  hk_value_t kargs[9];
  int kcodes[9];
  BUF(0, 0), BUF(1, 1), BUF(2, 2), BUF(3, 3), INT(4, n), INT(5, kk), INT(6, m);
  return launch(fn, T(3), kargs, kcodes, 7, n * m);
}

int hk_accel_softmax(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t num_args) {
  if (hk_check_tensors(fn->name, args, codes, num_args, 2, fn->device_type)) return -1;
  const int64_t c = T(1)->shape[T(1)->ndim - 1], rows = hk_numel(T(1)) / c;
  if (hk_numel(T(0)) != rows * c) return hk_fail(fn->name, "shapes differ");
  hk_value_t kargs[6];
  int kcodes[6];
  BUF(0, 0), BUF(1, 1), INT(2, rows), INT(3, c);
  return launch(fn, T(1), kargs, kcodes, 4, rows);
}

int hk_accel_conv2d(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t num_args) {
  if (hk_check_tensors(fn->name, args, codes, num_args, 4, fn->device_type)) return -1;
  if (T(0)->ndim != 4 || T(1)->ndim != 4 || T(3)->ndim != 4) return hk_fail(fn->name, "x, w and y must be 4-D");
  const int64_t n = T(0)->shape[0], c = T(0)->shape[1], h = T(0)->shape[2], w = T(0)->shape[3];
  const int64_t o = T(1)->shape[0], kh = T(1)->shape[2], kw = T(1)->shape[3], oh = T(3)->shape[2], ow = T(3)->shape[3];
  const int64_t pad = (oh - h + kh - 1) / 2;
  if (T(1)->shape[1] != c || T(3)->shape[1] != o || hk_numel(T(2)) != o || pad < 0)
    return hk_fail(fn->name, "shapes do not agree (x [N,C,H,W], w [O,C,KH,KW], b [O], y [N,O,OH,OW])");
  hk_value_t kargs[16];
  int kcodes[16];
  BUF(0, 0), BUF(1, 1), BUF(2, 2), BUF(3, 3);
  INT(4, n), INT(5, c), INT(6, h), INT(7, w), INT(8, o), INT(9, kh), INT(10, kw), INT(11, oh), INT(12, ow), INT(13, pad);
  return launch(fn, T(3), kargs, kcodes, 14, n * o * oh * ow);
}

int hk_accel_maxpool(hk_accel_fn* fn, hk_value_t* args, int32_t* codes, int32_t num_args) {
  if (hk_check_tensors(fn->name, args, codes, num_args, 2, fn->device_type)) return -1;
  if (T(0)->ndim != 4 || T(1)->ndim != 4) return hk_fail(fn->name, "x and y must be 4-D");
  const int64_t planes = T(0)->shape[0] * T(0)->shape[1], h = T(0)->shape[2], w = T(0)->shape[3];
  const int64_t oh = T(1)->shape[2], ow = T(1)->shape[3];
  if (oh == 0 || ow == 0 || h % oh || w % ow || hk_numel(T(1)) != planes * oh * ow)
    return hk_fail(fn->name, "output must divide the input evenly");
  hk_value_t kargs[9];
  int kcodes[9];
  BUF(0, 0), BUF(1, 1), INT(2, planes), INT(3, h), INT(4, w), INT(5, oh), INT(6, ow);
  return launch(fn, T(1), kargs, kcodes, 7, planes * oh * ow);
}
