// SPDX-License-Identifier: Apache-2.0
#include "seccomp/policy.h"

#include <errno.h>
#include <seccomp.h>
#include <stdbool.h>
#include <string.h>

#include "shared/log.h"

static const enum scmp_compare scmp_ops[] = {
    [EMBER_CMP_EQ] = SCMP_CMP_EQ,
    [EMBER_CMP_NE] = SCMP_CMP_NE,
    [EMBER_CMP_LT] = SCMP_CMP_LT,
    [EMBER_CMP_LE] = SCMP_CMP_LE,
    [EMBER_CMP_GT] = SCMP_CMP_GT,
    [EMBER_CMP_GE] = SCMP_CMP_GE,
    [EMBER_CMP_MASKED_EQ] = SCMP_CMP_MASKED_EQ,
};

static int param_value(const struct ember_policy_param *params, size_t nparams, const char *name,
                       uint64_t *out)
{
	for (size_t i = 0; i < nparams; i++)
		if (!strcmp(params[i].name, name)) {
			*out = params[i].value;
			return 0;
		}
	return -ENOENT;
}

static int add_rule(scmp_filter_ctx ctx, const struct ember_policy *p,
                    const struct ember_policy_rule *r, const struct ember_policy_param *params,
                    size_t nparams)
{
	struct scmp_arg_cmp cmp[EMBER_POLICY_MAX_CONDS];
	uint32_t action = r->action == EMBER_RULE_ERRNO ? SCMP_ACT_ERRNO((uint32_t)r->errno_value)
	                                                : SCMP_ACT_ALLOW;
	int err;

	if (r->nconds > EMBER_POLICY_MAX_CONDS)
		return -EINVAL;
	for (unsigned int i = 0; i < r->nconds; i++) {
		const struct ember_policy_cond *c = &r->conds[i];
		uint64_t value = c->value;

		if (c->op < EMBER_CMP_EQ || c->op > EMBER_CMP_MASKED_EQ || c->arg > 5)
			return -EINVAL;
		if (c->param && param_value(params, nparams, c->param, &value)) {
			log_error("%s.policy line %u: no value for $%s", p->name, r->line,
			          c->param);
			return -EINVAL;
		}
		cmp[i] = (struct scmp_arg_cmp){
		    .arg = c->arg,
		    .op = scmp_ops[c->op],
		    .datum_a = c->op == EMBER_CMP_MASKED_EQ ? c->mask : value,
		    .datum_b = c->op == EMBER_CMP_MASKED_EQ ? value : 0,
		};
	}
	err = seccomp_rule_add_array(ctx, action, r->nr, r->nconds, cmp);
	if (err)
		log_error_errno(err, "%s.policy line %u (%s): %m", p->name, r->line, r->syscall);
	return err;
}

int ember_policy_load(const struct ember_policy *p, uint32_t groups,
                      const struct ember_policy_param *params, size_t nparams)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int err = 0;

	if (!ctx)
		return -ENOMEM;
#ifdef EMBER_SANITIZERS
	groups |= EMBER_POLICY_SANITIZER; /* what the sanitizers' runtimes call, in every process */
#endif
	/*
	 * Every thread. The kernel logs what the filter kills whatever its flags; the
	 * errno: lines are refusals the policy expects in normal operation (libdw's
	 * realpath, glibc's clone3), so the filter does not ask it to log those too
	 * (SCMP_FLTATR_CTL_LOG): an operator's audit log shows only what matters.
	 */
	if ((err = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) ||
	    (err = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1)))
		goto out;
	for (size_t i = 0; i < p->nrules && !err; i++) {
		const struct ember_policy_rule *r = &p->rules[i];

		/* A call this architecture does not have needs no rule. */
		if ((r->group & groups) && r->nr >= 0)
			err = add_rule(ctx, p, r, params, nparams);
	}
	if (!err)
		err = seccomp_load(ctx);
	if (err)
		log_error_errno(err, "cannot install the %s system-call filter: %m", p->name);
out:
	seccomp_release(ctx);
	return err;
}

size_t ember_policy_count(const struct ember_policy *p, uint32_t groups)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nrules; i++) {
		bool seen = false;

		if (!(p->rules[i].group & groups) || p->rules[i].nr < 0 ||
		    p->rules[i].action != EMBER_RULE_ALLOW)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = (p->rules[j].group & groups) && p->rules[j].nr == p->rules[i].nr &&
			       p->rules[j].action == EMBER_RULE_ALLOW;
		n += !seen;
	}
	return n;
}

int ember_policy_find(const struct ember_policy *p, uint32_t groups, const char *syscall,
                      const struct ember_policy_rule **out)
{
	for (size_t i = 0; i < p->nrules; i++)
		if ((p->rules[i].group & groups) && !strcmp(p->rules[i].syscall, syscall)) {
			if (out)
				*out = &p->rules[i];
			return 0;
		}
	return -ENOENT;
}
