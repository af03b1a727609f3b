// SPDX-License-Identifier: Apache-2.0
/*
 * The collector's dispatch table as the protocol wants it: what the symbolizer may send in each
 * state. Written here on its own, apart from collector/peer.c's table, so that a change to the
 * table has to change this too (test_peer compares them; fuzz_peer holds the collector to it).
 */
#ifndef EMBER_TESTS_PEER_SPEC_H
#define EMBER_TESTS_PEER_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/peer.h"

static inline bool peer_spec_allows(enum ember_peer_state state, uint32_t type)
{
	switch (type) {
	case EMBER_MSG_HELLO:
		return state == EMBER_PEER_AWAIT_HELLO;
	case EMBER_MSG_BROKER_REQ:
	case EMBER_MSG_UNWIND_TABLE:
	case EMBER_MSG_UNWIND_ROWS:
	case EMBER_MSG_UNWIND_PROC:
	case EMBER_MSG_UNWIND_FILE:
	case EMBER_MSG_INTERP_ROW:
	case EMBER_MSG_DRAIN:
		return state == EMBER_PEER_ACTIVE || state == EMBER_PEER_FLUSHING;
	case EMBER_MSG_FLUSHED:
		return state == EMBER_PEER_FLUSHING; /* only after a FLUSH */
	default:
		return false; /* the collector's own messages, and unknown types */
	}
}

#endif
