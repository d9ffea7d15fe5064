/* util/json_cleanup.h — AUTO(json_decref) for jansson handles.
 *
 * Apart from util/cleanup.h so that code without jansson (fixtures, the
 * child's steps) need not see its header.
 */
#pragma once

#include <jansson.h>

#include "util/cleanup.h"

DEFINE_AUTO_CLEANUP(json_t, json_decref)
