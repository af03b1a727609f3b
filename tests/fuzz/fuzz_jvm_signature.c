// SPDX-License-Identifier: Apache-2.0
/*
 * A method's descriptor as a JVM's memory holds it ("(IJ[J)J"), turned into Java's parameter
 * list (--signatures): never read past its NUL, never written past the output, and what it
 * gives is one parenthesised list or nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/interp/jvm_method.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *d = malloc(size + 1), out[256];
	size_t len;

	if (!d)
		return 0;
	memcpy(d, data, size);
	d[size] = '\0';
	memset(out, 'x', sizeof(out));
	if (ember_jvm_signature_params(d, out, sizeof(out)) == 0) {
		len = strlen(out);
		if (len < 2 || out[0] != '(' || out[len - 1] != ')')
			abort();
	}
	free(d);
	return 0;
}
