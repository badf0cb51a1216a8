/* A small JSON tokenizer for the graph executor: no allocation of its own, tokens
 * in pre-order, each with the index just past its subtree so siblings can be
 * skipped. Strings are not unescaped (graph JSON names need no escapes). */
#ifndef HETRT_CRT_JSON_H_
#define HETRT_CRT_JSON_H_

#include <stddef.h>
#include <stdint.h>

typedef enum { HK_JSON_OBJECT, HK_JSON_ARRAY, HK_JSON_STRING, HK_JSON_NUMBER, HK_JSON_LITERAL } hk_json_type_t;

typedef struct {
  uint8_t type;
  int32_t start, end; /* byte range; strings exclude the quotes */
  int32_t size;       /* members of an object (keys + values), elements of an array */
  int32_t next;       /* token index just past this token's subtree */
} hk_json_token_t;

/* Tokenizes; with tokens == NULL only counts. Returns the token count, or -1
 * (error message set) on malformed input or nesting deeper than 32. */
int hk_json_parse(const char* text, size_t len, hk_json_token_t* tokens, int capacity);
/* The value of `key` in object token `obj`, or -1. */
int hk_json_get(const char* text, const hk_json_token_t* t, int obj, const char* key);
/* Element `i` of array token `arr`, or -1. */
int hk_json_at(const hk_json_token_t* t, int arr, int i);
/* A number token as an integer; 0 on success. */
int hk_json_int(const char* text, const hk_json_token_t* t, int tok, int64_t* out);
/* True when token `tok` is a string equal to `s`. */
int hk_json_streq(const char* text, const hk_json_token_t* t, int tok, const char* s);

#endif
