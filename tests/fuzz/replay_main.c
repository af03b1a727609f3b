// SPDX-License-Identifier: Apache-2.0
/*
 * main() for fuzz targets in ordinary (non-libFuzzer) builds: runs the target
 * on every file named on the command line, so that the seed corpus is a
 * regression test wherever the tests run.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		uint8_t *buf;
		long n;

		if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
			fprintf(stderr, "cannot read %s\n", argv[i]);
			return 1;
		}
		buf = malloc((size_t)n + 1);
		if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
			return 1;
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t)n);
		free(buf);
	}
	printf("%d inputs ran\n", argc - 1);
	return 0;
}
