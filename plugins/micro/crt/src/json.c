#include "json.h"

#include <stdlib.h>
#include <string.h>

#include "hetrt_crt.h"

typedef struct {
  const char* text;
  size_t len, pos;
  hk_json_token_t* tokens;
  int capacity, count, depth;
} parser_t;

static void skip_space(parser_t* p) {
  while (p->pos < p->len &&
         (p->text[p->pos] == ' ' || p->text[p->pos] == '\n' || p->text[p->pos] == '\t' || p->text[p->pos] == '\r'))
    ++p->pos;
}

static int add_token(parser_t* p, int type, size_t start) {
  const int index = p->count++;
  if (p->tokens != NULL) {
    if (index >= p->capacity) return -1;
    p->tokens[index].type = (uint8_t)type;
    p->tokens[index].start = (int32_t)start;
    p->tokens[index].end = (int32_t)start;
    p->tokens[index].size = 0;
    p->tokens[index].next = index + 1;
  }
  return index;
}

static int parse_value(parser_t* p);

static int parse_string(parser_t* p) {
  ++p->pos; /* opening quote */
  const size_t start = p->pos;
  while (p->pos < p->len && p->text[p->pos] != '"') {
    if (p->text[p->pos] == '\\') ++p->pos; /* keep escapes as they are */
    ++p->pos;
  }
  if (p->pos >= p->len) return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: unterminated string"), -1;
  const int index = add_token(p, HK_JSON_STRING, start);
  if (index < 0) return -1;
  if (p->tokens) p->tokens[index].end = (int32_t)p->pos;
  ++p->pos;
  return index;
}

static int parse_container(parser_t* p, int object) {
  if (++p->depth > 32) return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: nested too deeply"), -1;
  const int index = add_token(p, object ? HK_JSON_OBJECT : HK_JSON_ARRAY, p->pos);
  if (index < 0) return -1;
  ++p->pos;
  int size = 0;
  skip_space(p);
  if (p->pos < p->len && p->text[p->pos] == (object ? '}' : ']')) {
    ++p->pos;
  } else {
    for (;;) {
      skip_space(p);
      if (object) {
        if (p->pos >= p->len || p->text[p->pos] != '"')
          return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: object key expected at byte %lu",
                                (unsigned long)p->pos),
                 -1;
        if (parse_string(p) < 0) return -1;
        skip_space(p);
        if (p->pos >= p->len || p->text[p->pos] != ':')
          return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: ':' expected at byte %lu", (unsigned long)p->pos),
                 -1;
        ++p->pos;
        ++size;
      }
      if (parse_value(p) < 0) return -1;
      ++size;
      skip_space(p);
      if (p->pos < p->len && p->text[p->pos] == ',') {
        ++p->pos;
        continue;
      }
      if (p->pos < p->len && p->text[p->pos] == (object ? '}' : ']')) {
        ++p->pos;
        break;
      }
      return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: ',' or closing bracket expected at byte %lu",
                            (unsigned long)p->pos),
             -1;
    }
  }
  if (p->tokens) {
    p->tokens[index].size = size;
    p->tokens[index].end = (int32_t)p->pos;
    p->tokens[index].next = p->count;
  }
  --p->depth;
  return index;
}

static int parse_value(parser_t* p) {
  skip_space(p);
  if (p->pos >= p->len) return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: value expected at end"), -1;
  const char c = p->text[p->pos];
  if (c == '{') return parse_container(p, 1);
  if (c == '[') return parse_container(p, 0);
  if (c == '"') return parse_string(p);
  const size_t start = p->pos;
  while (p->pos < p->len && strchr(",]} \n\r\t", p->text[p->pos]) == NULL) ++p->pos;
  if (p->pos == start)
    return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: value expected at byte %lu", (unsigned long)start), -1;
  const int number = (c == '-' || (c >= '0' && c <= '9'));
  const int index = add_token(p, number ? HK_JSON_NUMBER : HK_JSON_LITERAL, start);
  if (index >= 0 && p->tokens) p->tokens[index].end = (int32_t)p->pos;
  return index;
}

int hk_json_parse(const char* text, size_t len, hk_json_token_t* tokens, int capacity) {
  if (len > 0x7fffffffu) return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON too large"), -1;
  parser_t p = {text, len, 0, tokens, capacity, 0, 0};
  if (parse_value(&p) < 0) return -1;
  skip_space(&p);
  if (p.pos != len)
    return hetrt_crt_fail(HETRT_CRT_ERR_INVALID, "graph JSON: trailing bytes at %lu", (unsigned long)p.pos), -1;
  return p.count;
}

int hk_json_streq(const char* text, const hk_json_token_t* t, int tok, const char* s) {
  if (tok < 0 || t[tok].type != HK_JSON_STRING) return 0;
  const size_t n = (size_t)(t[tok].end - t[tok].start);
  return strlen(s) == n && memcmp(text + t[tok].start, s, n) == 0;
}

int hk_json_get(const char* text, const hk_json_token_t* t, int obj, const char* key) {
  if (obj < 0 || t[obj].type != HK_JSON_OBJECT) return -1;
  int i = obj + 1;
  for (int k = 0; k < t[obj].size / 2; ++k) {
    const int value = i + 1;
    if (hk_json_streq(text, t, i, key)) return value;
    i = t[value].next;
  }
  return -1;
}

int hk_json_at(const hk_json_token_t* t, int arr, int i) {
  if (arr < 0 || t[arr].type != HK_JSON_ARRAY || i < 0 || i >= t[arr].size) return -1;
  int index = arr + 1;
  for (int k = 0; k < i; ++k) index = t[index].next;
  return index;
}

int hk_json_int(const char* text, const hk_json_token_t* t, int tok, int64_t* out) {
  if (tok < 0) return -1;
  char buf[24];
  const int n = t[tok].end - t[tok].start;
  if ((t[tok].type != HK_JSON_NUMBER && t[tok].type != HK_JSON_STRING) || n <= 0 || n >= (int)sizeof buf) return -1;
  memcpy(buf, text + t[tok].start, (size_t)n);
  buf[n] = 0;
  char* end = NULL;
  const long long v = strtoll(buf, &end, 10);
  if (end != buf + n) return -1;
  *out = (int64_t)v;
  return 0;
}
