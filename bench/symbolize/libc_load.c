// SPDX-License-Identifier: Apache-2.0
/*
 * A program that spends its time in many corners of the C library
 * (formatting, parsing, sorting, searching, regular expressions, memory),
 * so that samples of it are real addresses spread over libc.so.6.
 * Usage: libc_load SECONDS.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

static volatile size_t sink;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void round_of_work(regex_t *re, unsigned seed)
{
	char buf[256], *words[512];
	wchar_t wbuf[128];
	regmatch_t m[2];

	for (int i = 0; i < 512; i++) {
		seed = seed * 1103515245u + 12345u;
		snprintf(buf, sizeof(buf), "%u-%g-%x-%s", seed, seed / 7.0, seed, "word");
		words[i] = strdup(buf);
		sink += (size_t)strtod(buf + 2, NULL) + strlen(buf);
		sink += strstr(buf, "word") != NULL;
		sink += mbstowcs(wbuf, buf, 128);
	}
	qsort(words, 512, sizeof(*words), cmp_str);
	for (int i = 0; i < 512; i++) {
		sink += regexec(re, words[i], 2, m, 0) == 0;
		memmove(buf, words[i], strlen(words[i]) + 1);
		sink += (size_t)strtol(buf, NULL, 10);
		free(words[i]);
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	struct timespec start, now;
	regex_t re;
	unsigned seed = 1;

	if (regcomp(&re, "([0-9]+)-[0-9.e+]+-[a-f0-9]+-wo?rd", REG_EXTENDED))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		round_of_work(&re, seed++);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 <
	         seconds);
	regfree(&re);
	printf("%zu\n", sink);
	return 0;
}
