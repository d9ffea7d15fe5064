/* util/sha256.h — hex SHA-256 of a buffer (nettle). */
#pragma once
#include <stddef.h>
void sha256_hex(const void *data, size_t len, char out[65]);
