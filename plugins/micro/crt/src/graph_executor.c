/* Graph executor for TVM graph JSON on the C runtime: storage per storage id
 * from the arena, functions from the system library, params copied in once. */
#include <dlpack/dlpack.h>
#include <string.h>

#include "hetrt_crt.h"
#include "json.h"
#include "tvm/runtime/crt/module.h"

TVMBackendPackedCFunc hetrt_crt_find_function(const char* name);

enum { kMaxNdim = 8 };

typedef struct {
  TVMBackendPackedCFunc fn; /* NULL: a __copy (memcpy from args[0] to args[1]) */
  int32_t arg_begin, num_args, node;
} op_t;

struct hetrt_crt_graph {
  hetrt_crt_arena_t* arena;
  int32_t num_entries, num_inputs, num_outputs, num_ops;
  DLTensor* entries;
  int32_t* sids;
  const char** input_names;
  int32_t* input_eids;
  int32_t* output_eids;
  op_t* ops;
  TVMValue* args;
  int* codes;
};

static int parse_dtype(const char* s, DLDataType* out) {
  int lanes = 1, bits = 0;
  const char* p = s;
  if (strcmp(s, "bool") == 0) {
    out->code = kDLUInt, out->bits = 1, out->lanes = 1;
    return 0;
  }
  if (strncmp(p, "float", 5) == 0)
    out->code = kDLFloat, p += 5;
  else if (strncmp(p, "uint", 4) == 0)
    out->code = kDLUInt, p += 4;
  else if (strncmp(p, "int", 3) == 0)
    out->code = kDLInt, p += 3;
  else if (strncmp(p, "bfloat", 6) == 0)
    out->code = kDLBfloat, p += 6;
  else
    return -1;
  while (*p >= '0' && *p <= '9') bits = bits * 10 + (*p++ - '0');
  if (*p == 'x') {
    lanes = 0;
    ++p;
    while (*p >= '0' && *p <= '9') lanes = lanes * 10 + (*p++ - '0');
  }
  if (*p != 0 || bits <= 0 || bits > 64 || lanes <= 0 || lanes > 64) return -1;
  out->bits = (uint8_t)bits;
  out->lanes = (uint16_t)lanes;
  return 0;
}

static uint64_t entry_bytes(const DLTensor* t) {
  uint64_t n = ((uint64_t)t->dtype.bits * t->dtype.lanes + 7u) / 8u;
  for (int i = 0; i < t->ndim; ++i) n *= (uint64_t)t->shape[i];
  return n;
}

/* Copies string token `tok` into `buf` (NUL-terminated); NULL when it does not fit. */
static const char* tok_str(const char* json, const hk_json_token_t* t, int tok, char* buf, size_t size) {
  const size_t n = (size_t)(t[tok].end - t[tok].start);
  if (t[tok].type != HK_JSON_STRING || n >= size) return NULL;
  memcpy(buf, json + t[tok].start, n);
  buf[n] = 0;
  return buf;
}

/* A persistent copy of string token `tok` in the arena. */
static const char* tok_dup(hetrt_crt_arena_t* arena, const char* json, const hk_json_token_t* t, int tok) {
  const size_t n = (size_t)(t[tok].end - t[tok].start);
  char* s = (char*)hetrt_crt_arena_alloc(arena, n + 1, HETRT_CRT_POOL_EXECUTOR);
  if (s == NULL) return NULL;
  memcpy(s, json + t[tok].start, n);
  s[n] = 0;
  return s;
}

#define FAIL(...) return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: " __VA_ARGS__)

/* attrs.<key> = [tag, [...]]: the list token, checked to hold one value per entry. */
static int attr_list(const char* json, const hk_json_token_t* t, int attrs, const char* key, int entries) {
  const int v = hk_json_get(json, t, attrs, key);
  if (v < 0 || t[v].type != HK_JSON_ARRAY || t[v].size != 2) return -1;
  const int list = hk_json_at(t, v, 1);
  if (list < 0 || t[list].type != HK_JSON_ARRAY || t[list].size != entries) return -1;
  return list;
}

/* Reads a param dict and copies each array named like an input into it. */
static hetrt_crt_status_t load_params(hetrt_crt_graph_t* g, const uint8_t* p, size_t len) {
  size_t pos = 0;
#define READ(dst, n)                                                                                \
  do {                                                                                              \
    if (len - pos < (size_t)(n))                                                                    \
      return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "params: truncated at %lu", (unsigned long)pos); \
    memcpy((dst), p + pos, (size_t)(n));                                                            \
    pos += (size_t)(n);                                                                             \
  } while (0)
  uint64_t magic, reserved, count, count2;
  READ(&magic, 8);
  if (magic != 0xF7E58D4F05049CB7ULL) return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "params: bad magic");
  READ(&reserved, 8);
  READ(&count, 8);
  if (count > (len - pos) / 48) return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "params: count does not fit");
  const size_t names_at = pos;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t n;
    READ(&n, 8);
    if (n > len - pos) return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "params: truncated name");
    pos += (size_t)n;
  }
  READ(&count2, 8);
  if (count2 != count) return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "params: names and arrays differ");
  size_t name_pos = names_at;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t name_len;
    memcpy(&name_len, p + name_pos, 8);
    const char* name = (const char*)p + name_pos + 8;
    name_pos += 8 + (size_t)name_len;
    int32_t device[2], ndim;
    uint8_t code, bits;
    uint16_t lanes;
    int64_t data_size;
    READ(&magic, 8);
    if (magic != 0xDD5E40F096B4A13FULL) return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "params: bad array magic");
    READ(&reserved, 8);
    READ(device, 8);
    READ(&ndim, 4);
    READ(&code, 1);
    READ(&bits, 1);
    READ(&lanes, 2);
    (void)code; /* the graph's dtype governs; sizes are checked below */
    (void)bits;
    (void)lanes;
    if (ndim < 0 || ndim > kMaxNdim) return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "params: bad ndim");
    pos += (size_t)ndim * 8;
    if (pos > len) return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "params: truncated shape");
    READ(&data_size, 8);
    if (data_size < 0 || (uint64_t)data_size > len - pos)
      return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "params: truncated data");
    for (int k = 0; k < g->num_inputs; ++k) {
      if (strlen(g->input_names[k]) != name_len || memcmp(g->input_names[k], name, (size_t)name_len) != 0) continue;
      DLTensor* t = &g->entries[g->input_eids[k]];
      if ((uint64_t)data_size != entry_bytes(t))
        return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "params: '%s' has %ld bytes, the graph wants %lu",
                              g->input_names[k], (long)data_size, (unsigned long)entry_bytes(t));
      memcpy(t->data, p + pos, (size_t)data_size);
    }
    pos += (size_t)data_size;
  }
  return HETRT_CRT_OK;
#undef READ
}

hetrt_crt_status_t hetrt_crt_graph_create(hetrt_crt_arena_t* tensor_arena, hetrt_crt_arena_t* arena, const char* json,
                                          size_t json_len, const uint8_t* params, size_t params_len,
                                          hetrt_crt_graph_t** out) {
  /* Below, `arena` is the executor's memory; tensors go to `tensor_arena`. */
  if (arena == NULL) arena = tensor_arena;
  hetrt_crt_set_workspace_arena(arena); /* parse-time temporaries */
  hetrt_crt_graph_t* g = (hetrt_crt_graph_t*)hetrt_crt_arena_alloc(arena, sizeof *g, HETRT_CRT_POOL_EXECUTOR);
  if (g == NULL) return HETRT_CRT_ERR_NO_MEMORY;
  memset(g, 0, sizeof *g);
  g->arena = tensor_arena;
  const int count = hk_json_parse(json, json_len, NULL, 0);
  if (count < 0) return HETRT_CRT_ERR_INVALID;
  /* Tokens are temporary: taken from the arena's tail and given back below. */
  hk_json_token_t* t = (hk_json_token_t*)TVMBackendAllocWorkspace(1, 0, (uint64_t)count * sizeof *t, 0, 0);
  if (t == NULL) return HETRT_CRT_ERR_NO_MEMORY;
  hetrt_crt_status_t status = HETRT_CRT_ERR_INVALID;
  hk_json_parse(json, json_len, t, count);
  do {
    const int nodes = hk_json_get(json, t, 0, "nodes");
    const int row_ptr = hk_json_get(json, t, 0, "node_row_ptr");
    const int arg_nodes = hk_json_get(json, t, 0, "arg_nodes");
    const int heads = hk_json_get(json, t, 0, "heads");
    const int attrs = hk_json_get(json, t, 0, "attrs");
    if (nodes < 0 || row_ptr < 0 || arg_nodes < 0 || heads < 0 || attrs < 0 || t[nodes].type != HK_JSON_ARRAY ||
        t[row_ptr].type != HK_JSON_ARRAY || t[arg_nodes].type != HK_JSON_ARRAY || t[heads].type != HK_JSON_ARRAY) {
      hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: nodes, node_row_ptr, arg_nodes, heads and attrs are required");
      break;
    }
    const int num_nodes = t[nodes].size;
    if (t[row_ptr].size != num_nodes + 1) {
      hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: node_row_ptr needs nodes + 1 values");
      break;
    }
    int32_t* rows =
        (int32_t*)hetrt_crt_arena_alloc(arena, sizeof(int32_t) * (size_t)(num_nodes + 1), HETRT_CRT_POOL_EXECUTOR);
    if (rows == NULL) {
      status = HETRT_CRT_ERR_NO_MEMORY;
      break;
    }
    int ok = 1;
    for (int i = 0, tok = row_ptr + 1; i <= num_nodes; ++i, tok = t[tok].next) {
      int64_t v;
      if (hk_json_int(json, t, tok, &v) || v < 0 || v > 1000000 || (i > 0 && v < rows[i - 1])) {
        ok = 0;
        break;
      }
      rows[i] = (int32_t)v;
    }
    if (!ok || rows[0] != 0) {
      hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: bad node_row_ptr");
      break;
    }
    const int n = rows[num_nodes];
    g->num_entries = n;
    const int dltype = attr_list(json, t, attrs, "dltype", n);
    const int shape = attr_list(json, t, attrs, "shape", n);
    const int sid = attr_list(json, t, attrs, "storage_id", n);
    if (dltype < 0 || shape < 0 || sid < 0) {
      hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: attrs dltype, shape and storage_id need one value per entry");
      break;
    }
    int total_dims = 0;
    for (int e = 0, sh = shape + 1; e < n; ++e, sh = t[sh].next)
      total_dims += t[sh].type == HK_JSON_ARRAY ? t[sh].size : 0;
    g->entries = (DLTensor*)hetrt_crt_arena_alloc(arena, sizeof(DLTensor) * (size_t)n, HETRT_CRT_POOL_EXECUTOR);
    int64_t* dims =
        (int64_t*)hetrt_crt_arena_alloc(arena, sizeof(int64_t) * (size_t)(total_dims + 1), HETRT_CRT_POOL_EXECUTOR);
    int32_t* sids = g->sids =
        (int32_t*)hetrt_crt_arena_alloc(arena, sizeof(int32_t) * (size_t)n, HETRT_CRT_POOL_EXECUTOR);
    if (!g->entries || !dims || !sids) {
      status = HETRT_CRT_ERR_NO_MEMORY;
      break;
    }
    for (int e = 0, dt = dltype + 1, sh = shape + 1, si = sid + 1; e < n && ok;
         ++e, dt = t[dt].next, sh = t[sh].next, si = t[si].next) {
      DLTensor* d = &g->entries[e];
      memset(d, 0, sizeof *d);
      d->device.device_type = kDLCPU;
      d->shape = dims;
      int64_t s;
      char dtype[16];
      const char* dtype_text = tok_str(json, t, dt, dtype, sizeof dtype);
      if (dtype_text == NULL || parse_dtype(dtype_text, &d->dtype) || t[sh].type != HK_JSON_ARRAY ||
          t[sh].size > kMaxNdim || hk_json_int(json, t, si, &s) || s < 0 || s >= n) {
        hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: bad dltype, shape or storage_id of entry %d", e);
        ok = 0;
        break;
      }
      d->ndim = t[sh].size;
      for (int k = 0, dim = sh + 1; k < d->ndim; ++k, dim = t[dim].next) {
        int64_t v;
        if (hk_json_int(json, t, dim, &v) || v < 0 || v > (1 << 30)) {
          ok = 0;
          break;
        }
        d->shape[k] = v;
      }
      dims += d->ndim;
      sids[e] = (int32_t)s;
    }
    if (!ok) {
      hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: bad entry attributes");
      break;
    }
    /* Inputs and outputs. */
    g->num_inputs = t[arg_nodes].size;
    g->num_outputs = t[heads].size;
    g->input_names = (const char**)hetrt_crt_arena_alloc(arena, sizeof(char*) * (size_t)(g->num_inputs + 1),
                                                         HETRT_CRT_POOL_EXECUTOR);
    g->input_eids =
        (int32_t*)hetrt_crt_arena_alloc(arena, sizeof(int32_t) * (size_t)(g->num_inputs + 1), HETRT_CRT_POOL_EXECUTOR);
    g->output_eids =
        (int32_t*)hetrt_crt_arena_alloc(arena, sizeof(int32_t) * (size_t)(g->num_outputs + 1), HETRT_CRT_POOL_EXECUTOR);
    if (!g->input_names || !g->input_eids || !g->output_eids) {
      status = HETRT_CRT_ERR_NO_MEMORY;
      break;
    }
    for (int i = 0, tok = arg_nodes + 1; i < g->num_inputs && ok; ++i, tok = t[tok].next) {
      int64_t nid;
      const int node =
          hk_json_int(json, t, tok, &nid) || nid < 0 || nid >= num_nodes ? -1 : hk_json_at(t, nodes, (int)nid);
      const int name = hk_json_get(json, t, node, "name");
      if (name < 0 || t[name].type != HK_JSON_STRING || !(g->input_names[i] = tok_dup(arena, json, t, name))) {
        ok = 0;
        break;
      }
      g->input_eids[i] = rows[nid];
    }
    for (int i = 0, tok = heads + 1; i < g->num_outputs && ok; ++i, tok = t[tok].next) {
      int64_t nid, idx;
      if (t[tok].type != HK_JSON_ARRAY || t[tok].size < 2 || hk_json_int(json, t, tok + 1, &nid) ||
          hk_json_int(json, t, t[tok + 1].next, &idx) || nid < 0 || nid >= num_nodes || idx < 0 ||
          rows[nid] + idx >= rows[nid + 1]) {
        ok = 0;
        break;
      }
      g->output_eids[i] = rows[nid] + (int32_t)idx;
    }
    if (!ok) {
      hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: bad arg_nodes or heads");
      break;
    }
    /* Operator calls: count, then fill. */
    int num_ops = 0, num_args = 0;
    for (int i = 0, node = nodes + 1; i < num_nodes; ++i, node = t[node].next) {
      const int inputs = hk_json_get(json, t, node, "inputs");
      if (hk_json_streq(json, t, hk_json_get(json, t, node, "op"), "tvm_op")) {
        ++num_ops;
        num_args += (inputs >= 0 ? t[inputs].size : 0) + (rows[i + 1] - rows[i]);
      }
    }
    g->ops = (op_t*)hetrt_crt_arena_alloc(arena, sizeof(op_t) * (size_t)(num_ops + 1), HETRT_CRT_POOL_EXECUTOR);
    g->args =
        (TVMValue*)hetrt_crt_arena_alloc(arena, sizeof(TVMValue) * (size_t)(num_args + 1), HETRT_CRT_POOL_EXECUTOR);
    g->codes = (int*)hetrt_crt_arena_alloc(arena, sizeof(int) * (size_t)(num_args + 1), HETRT_CRT_POOL_EXECUTOR);
    if (!g->ops || !g->args || !g->codes) {
      status = HETRT_CRT_ERR_NO_MEMORY;
      break;
    }
    int arg = 0;
    for (int i = 0, node = nodes + 1; i < num_nodes && ok; ++i, node = t[node].next) {
      if (!hk_json_streq(json, t, hk_json_get(json, t, node, "op"), "tvm_op")) continue;
      int attr = hk_json_get(json, t, node, "attrs");
      if (attr < 0) attr = hk_json_get(json, t, node, "attr");
      const int func = hk_json_get(json, t, attr, "func_name");
      const int inputs = hk_json_get(json, t, node, "inputs");
      if (func < 0 || t[func].type != HK_JSON_STRING || inputs < 0 || t[inputs].type != HK_JSON_ARRAY) {
        ok = 0;
        break;
      }
      char name_buf[128];
      const char* name = tok_str(json, t, func, name_buf, sizeof name_buf);
      if (name == NULL) {
        hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: node %d: function name too long", i);
        ok = 0;
        break;
      }
      if (strcmp(name, "__nop") == 0) continue;
      op_t* op = &g->ops[g->num_ops];
      op->node = i;
      op->arg_begin = arg;
      op->fn = NULL;
      if (strcmp(name, "__copy") != 0) {
        op->fn = hetrt_crt_find_function(name);
        if (op->fn == NULL) {
          hetrt_crt_fail(HETRT_CRT_ERR_NOT_FOUND, "node %d: function '%s' is not in the system library", i, name);
          status = HETRT_CRT_ERR_NOT_FOUND;
          ok = 0;
          break;
        }
      }
      for (int k = 0, in = inputs + 1; k < t[inputs].size; ++k, in = t[in].next) {
        int64_t nid, idx;
        if (t[in].type != HK_JSON_ARRAY || t[in].size < 2 || hk_json_int(json, t, in + 1, &nid) ||
            hk_json_int(json, t, t[in + 1].next, &idx) || nid < 0 || nid >= i || idx < 0 ||
            rows[nid] + idx >= rows[nid + 1]) {
          hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: node %d has a bad input", i);
          ok = 0;
          break;
        }
        g->args[arg].v_handle = &g->entries[rows[nid] + idx];
        g->codes[arg++] = kTVMDLTensorHandle;
      }
      for (int k = rows[i]; k < rows[i + 1] && ok; ++k) {
        g->args[arg].v_handle = &g->entries[k];
        g->codes[arg++] = kTVMDLTensorHandle;
      }
      op->num_args = arg - op->arg_begin;
      if (op->fn == NULL && op->num_args != 2) {
        hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: node %d: __copy takes one input and one output", i);
        ok = 0;
      }
      ++g->num_ops;
    }
    if (!ok) break;
    status = HETRT_CRT_OK;
  } while (0);
  TVMBackendFreeWorkspace(1, 0, t); /* the tokens' space becomes free for tensors */
  if (status != HETRT_CRT_OK) return status;
  /* One buffer per storage id (sized by its largest entry); entries view them. */
  const int n = g->num_entries;
  uint64_t* sid_bytes = (uint64_t*)TVMBackendAllocWorkspace(1, 0, sizeof(uint64_t) * (size_t)(n + 1), 0, 0);
  if (sid_bytes == NULL) return HETRT_CRT_ERR_NO_MEMORY;
  memset(sid_bytes, 0, sizeof(uint64_t) * (size_t)(n + 1));
  for (int e = 0; e < n; ++e) {
    const uint64_t bytes = entry_bytes(&g->entries[e]);
    if (bytes > sid_bytes[g->sids[e]]) sid_bytes[g->sids[e]] = bytes;
  }
  /* Storage pointers reuse the sid_bytes slots once read (same size, LIFO-safe). */
  void** storage = (void**)sid_bytes;
  for (int s = 0; s < n; ++s) {
    const uint64_t bytes = sid_bytes[s];
    storage[s] = bytes ? hetrt_crt_arena_alloc(tensor_arena, (size_t)bytes, HETRT_CRT_POOL_TENSORS) : NULL;
    if (bytes && storage[s] == NULL) status = HETRT_CRT_ERR_NO_MEMORY;
  }
  if (status == HETRT_CRT_OK)
    for (int e = 0; e < n; ++e) g->entries[e].data = storage[g->sids[e]];
  TVMBackendFreeWorkspace(1, 0, sid_bytes);
  if (status != HETRT_CRT_OK) return status;
  if (params != NULL && params_len > 0) {
    status = load_params(g, params, params_len);
    if (status != HETRT_CRT_OK) return status;
  }
  /* Parse-time temporaries are in the executor's peak; from here on the
   * workspace pool reports what kernels use while running. */
  arena->peak_tail = 0;
  hetrt_crt_set_workspace_arena(tensor_arena);
  *out = g;
  return HETRT_CRT_OK;
}

int hetrt_crt_graph_num_inputs(const hetrt_crt_graph_t* g) { return g->num_inputs; }
int hetrt_crt_graph_num_outputs(const hetrt_crt_graph_t* g) { return g->num_outputs; }

const char* hetrt_crt_graph_input_name(const hetrt_crt_graph_t* g, int index) {
  return index >= 0 && index < g->num_inputs ? g->input_names[index] : NULL;
}

int hetrt_crt_graph_input_index(const hetrt_crt_graph_t* g, const char* name) {
  for (int i = 0; i < g->num_inputs; ++i)
    if (strcmp(g->input_names[i], name) == 0) return i;
  return -1;
}

void* hetrt_crt_graph_input_data(hetrt_crt_graph_t* g, int index, size_t* nbytes) {
  if (index < 0 || index >= g->num_inputs) return NULL;
  DLTensor* t = &g->entries[g->input_eids[index]];
  if (nbytes) *nbytes = (size_t)entry_bytes(t);
  return t->data;
}

void* hetrt_crt_graph_output_data(hetrt_crt_graph_t* g, int index, size_t* nbytes) {
  if (index < 0 || index >= g->num_outputs) return NULL;
  DLTensor* t = &g->entries[g->output_eids[index]];
  if (nbytes) *nbytes = (size_t)entry_bytes(t);
  return t->data;
}

hetrt_crt_status_t hetrt_crt_graph_run(hetrt_crt_graph_t* g) {
  hetrt_crt_set_workspace_arena(g->arena);
  TVMValue ret;
  int ret_code;
  for (int i = 0; i < g->num_ops; ++i) {
    const op_t* op = &g->ops[i];
    if (op->fn == NULL) {
      DLTensor* src = (DLTensor*)g->args[op->arg_begin].v_handle;
      DLTensor* dst = (DLTensor*)g->args[op->arg_begin + 1].v_handle;
      memcpy(dst->data, src->data, (size_t)entry_bytes(dst));
      continue;
    }
    if (op->fn(&g->args[op->arg_begin], &g->codes[op->arg_begin], op->num_args, &ret, &ret_code, NULL) != 0) {
      char message[200];
      strncpy(message, hetrt_crt_last_error(), sizeof message - 1);
      message[sizeof message - 1] = 0;
      return hetrt_crt_fail(HETRT_CRT_ERR_KERNEL, "node %d failed: %s", op->node, message);
    }
  }
  return HETRT_CRT_OK;
}
