// SPDX-License-Identifier: Apache-2.0
/*
 * Build tool: turns a seccomp/NAME.policy table into a C table for policy.c.
 *
 *   policy_gen NAME INPUT.policy OUTPUT.c [MORE.policy...]
 *
 * The rows of MORE tables follow INPUT's (a sanitized build adds seccomp/sanitizer.policy
 * to both policies; other builds' tables are INPUT's alone).
 *
 * A line is "GROUP SYSCALL ACTION CONDITIONS WHY...", '#' starts a comment.
 * Syscall names become SCMP_SYS(name) and constants stay C expressions, so
 * a misspelt name or constant is a compile error, not a silent hole. Every
 * rule must say why it is there.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONDS 4 /* EMBER_POLICY_MAX_CONDS */

static const char *in_path;
static unsigned int lineno;

static void die(const char *msg, const char *detail)
{
	fprintf(stderr, "%s:%u: %s%s%s\n", in_path, lineno, msg, detail ? ": " : "",
	        detail ? detail : "");
	exit(1);
}

static char *next_field(char **p)
{
	char *s = *p, *start;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s)
		return NULL;
	start = s;
	while (*s && *s != ' ' && *s != '\t')
		s++;
	if (*s)
		*s++ = '\0';
	*p = s;
	return start;
}

static void put_c_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void put_group(FILE *out, const char *g)
{
	fputs("EMBER_POLICY_", out);
	for (; *g; g++) {
		if (!isalnum((unsigned char)*g) && *g != '-')
			die("bad group name", NULL);
		fputc(*g == '-' ? '_' : toupper((unsigned char)*g), out);
	}
}

/* One condition: argN[&MASK]OP(VALUE|$param). */
static void put_cond(FILE *out, char *c)
{
	static const struct {
		const char *text;
		const char *op;
	} ops[] = {
	    {"==", "EMBER_CMP_EQ"}, {"!=", "EMBER_CMP_NE"}, {"<=", "EMBER_CMP_LE"},
	    {">=", "EMBER_CMP_GE"}, {"<", "EMBER_CMP_LT"},  {">", "EMBER_CMP_GT"},
	};
	char *mask = NULL, *value = NULL;
	const char *op = NULL;
	int arg;

	if (strncmp(c, "arg", 3) || c[3] < '0' || c[3] > '5')
		die("a condition starts with arg0..arg5", c);
	arg = c[3] - '0';
	c += 4;
	for (char *s = c; *s && !op; s++)
		for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
			if (!strncmp(s, ops[i].text, strlen(ops[i].text))) {
				op = ops[i].op;
				value = s + strlen(ops[i].text);
				*s = '\0';
				break;
			}
	if (!op || !*value)
		die("a condition needs ==, !=, <, <=, > or >= and a value", NULL);
	if (*c == '&') {
		mask = c + 1;
		if (strcmp(op, "EMBER_CMP_EQ"))
			die("a masked comparison must use ==", NULL);
		op = "EMBER_CMP_MASKED_EQ";
	} else if (*c) {
		die("unexpected text after argN", c);
	}
	fprintf(out, "{%d, %s, ", arg, op);
	fprintf(out, "(uint64_t)(%s), ", mask ? mask : "0");
	if (*value == '$') {
		fputs("0, ", out);
		put_c_string(out, value + 1);
	} else {
		fprintf(out, "(uint64_t)(%s), NULL", value);
	}
	fputs("}", out);
}

static void put_rule(FILE *out, char *line)
{
	char *p = line, *group = next_field(&p), *name = next_field(&p);
	char *action = next_field(&p), *conds = next_field(&p), *why;
	const char *errno_name = "0";
	int nconds = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	why = p;
	if (!group || !name || !action || !conds || !*why)
		die("expected: GROUP SYSCALL ACTION CONDITIONS WHY", NULL);
	for (char *s = name; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			die("bad system call name", name);
	if (!strncmp(action, "errno:", 6))
		errno_name = action + 6;
	else if (strcmp(action, "allow"))
		die("the action is allow or errno:NAME", action);
	fprintf(out, "\t{\"%s\", SCMP_SYS(%s), ", name, name);
	put_group(out, group);
	fprintf(out, ", %s, %s, ",
	        strcmp(action, "allow") ? "EMBER_RULE_ERRNO" : "EMBER_RULE_ALLOW", errno_name);
	if (!strcmp(conds, "-")) {
		fputs("0, {{0}}, ", out);
	} else {
		char *c, *save = NULL;
		FILE *tmp = tmpfile();
		char buf[4096];
		size_t n;

		if (!tmp)
			die("tmpfile failed", NULL);
		for (c = strtok_r(conds, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
			if (nconds == MAX_CONDS)
				die("too many conditions", NULL);
			if (nconds++)
				fputs(", ", tmp);
			put_cond(tmp, c);
		}
		fprintf(out, "%d, {", nconds);
		rewind(tmp);
		while ((n = fread(buf, 1, sizeof(buf), tmp)) > 0)
			fwrite(buf, 1, n, out);
		fclose(tmp);
		fputs("}, ", out);
	}
	put_c_string(out, why);
	fprintf(out, ", %u},\n", lineno);
}

/* Writes the rules of one .policy table; returns how many. */
static int put_table(FILE *out, const char *path)
{
	char line[1024];
	FILE *in = fopen(path, "r");
	int rules = 0;

	in_path = path;
	lineno = 0;
	if (!in) {
		perror(path);
		exit(1);
	}
	while (fgets(line, sizeof(line), in)) {
		char *hash = strchr(line, '#'), *s = line;

		lineno++;
		if (!strchr(line, '\n') && !feof(in))
			die("line too long", NULL);
		if (hash)
			*hash = '\0';
		line[strcspn(line, "\r\n")] = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			continue;
		put_rule(out, s);
		rules++;
	}
	if (ferror(in)) {
		perror(path);
		exit(1);
	}
	fclose(in);
	return rules;
}

int main(int argc, char **argv)
{
	FILE *out;
	int rules;

	if (argc < 4) {
		fprintf(stderr, "usage: policy_gen NAME INPUT.policy OUTPUT.c [MORE.policy...]\n");
		return 2;
	}
	out = fopen(argv[3], "w");
	if (!out) {
		perror("policy_gen");
		return 1;
	}
	fprintf(out,
	        "/* Generated by seccomp/policy_gen.c from %s: edit that file instead. */\n"
	        "#include \"seccomp/policy_consts.h\"\n\n"
	        "static const struct ember_policy_rule rules[] = {\n",
	        argv[2]);
	rules = put_table(out, argv[2]);
	for (int i = 4; i < argc; i++)
		rules += put_table(out, argv[i]);
	fprintf(out, "};\n\nconst struct ember_policy ember_%s_policy = {\"%s\", rules, %d};\n",
	        argv[1], argv[1], rules);
	if (fclose(out)) {
		perror("policy_gen");
		return 1;
	}
	return 0;
}
