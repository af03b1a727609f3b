// SPDX-License-Identifier: Apache-2.0
/*
 * What an OTLP receiver answers: a gRPC body (framed, maybe gzip), a
 * grpc-status-details-bin value, an OTLP/HTTP body. The first byte picks the
 * parser, the rest is the input.
 */
#include <stdint.h>
#include <string.h>

#include "symbolizer/export/otlp_transport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_send_result r;

	if (!size)
		return 0;
	memset(&r, 0, sizeof(r));
	switch (data[0] % 4) {
	case 0:
		ember_grpc_parse_response(data + 1, size - 1, "gzip", &r);
		break;
	case 1:
		if (ember_grpc_retry_delay_ms((const char *)data + 1, size - 1) > 3600ull * 1000)
			__builtin_trap();
		break;
	case 2:
		r.http_status = 200;
		ember_http_parse_response(data + 1, size - 1, "application/x-protobuf", &r);
		break;
	case 3:
		r.http_status = 400;
		ember_http_parse_response(data + 1, size - 1, "application/x-protobuf", &r);
		break;
	}
	if (memchr(r.message, '\0', sizeof(r.message)) == NULL)
		__builtin_trap();
	return 0;
}
