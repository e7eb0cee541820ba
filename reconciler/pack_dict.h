/* The preset dictionary pack.c deflates cached text with (static, read-only). */
#ifndef MKUEUE_RC_PACK_DICT_H
#define MKUEUE_RC_PACK_DICT_H

#include <stddef.h>

extern const char rc_pack_dict[];
extern const size_t rc_pack_dict_len;

#endif
