/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The kernel types ember's eBPF programs use, for build machines whose
 * kernel has no BTF to generate vmlinux.h from (-DEMBER_VMLINUX_FALLBACK=ON).
 * Struct layouts that vary between kernels are marked preserve_access_index,
 * so libbpf relocates field accesses against the running kernel's BTF at
 * load time (CO-RE); only the stable UAPI layouts are written out in full.
 * Add a type here whenever a program starts to use it (CI builds with it).
 */
#ifndef __VMLINUX_H__
#define __VMLINUX_H__

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
typedef int pid_t;
enum { false = 0, true = 1 };

/* UAPI: stable. */
enum bpf_map_type {
	BPF_MAP_TYPE_UNSPEC = 0,
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PROG_ARRAY = 3,
	BPF_MAP_TYPE_PERF_EVENT_ARRAY = 4,
	BPF_MAP_TYPE_PERCPU_HASH = 5,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_STACK_TRACE = 7,
	BPF_MAP_TYPE_CGROUP_ARRAY = 8,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_LRU_PERCPU_HASH = 10,
	BPF_MAP_TYPE_LPM_TRIE = 11,
	BPF_MAP_TYPE_ARRAY_OF_MAPS = 12,
	BPF_MAP_TYPE_HASH_OF_MAPS = 13,
	BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
	BPF_F_LOCK = 4,
};

enum {
	BPF_F_NO_PREALLOC = 1,
	BPF_F_MMAPABLE = 1024,
};

enum {
	BPF_RB_NO_WAKEUP = 1,
	BPF_RB_FORCE_WAKEUP = 2,
};

enum {
	BPF_RB_AVAIL_DATA = 0,
};

enum {
	BPF_F_SKIP_FIELD_MASK = 255,
	BPF_F_USER_STACK = 256,
	BPF_F_FAST_STACK_CMP = 512,
	BPF_F_REUSE_STACKID = 1024,
	BPF_F_USER_BUILD_ID = 2048,
};

#if defined(__TARGET_ARCH_x86)
/* x86-64 register layout of user_pt_regs / pt_regs (UAPI). */
struct pt_regs {
	unsigned long r15;
	unsigned long r14;
	unsigned long r13;
	unsigned long r12;
	unsigned long bp;
	unsigned long bx;
	unsigned long r11;
	unsigned long r10;
	unsigned long r9;
	unsigned long r8;
	unsigned long ax;
	unsigned long cx;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
	unsigned long orig_ax;
	unsigned long ip;
	unsigned long cs;
	unsigned long flags;
	unsigned long sp;
	unsigned long ss;
};
typedef struct pt_regs bpf_user_pt_regs_t;
#elif defined(__TARGET_ARCH_arm64)
struct user_pt_regs {
	__u64 regs[31];
	__u64 sp;
	__u64 pc;
	__u64 pstate;
};
struct pt_regs {
	union {
		struct user_pt_regs user_regs;
		struct {
			__u64 regs[31];
			__u64 sp;
			__u64 pc;
			__u64 pstate;
		};
	};
	__u64 orig_x0;
	__s32 syscallno;
} __attribute__((preserve_access_index));
typedef struct user_pt_regs bpf_user_pt_regs_t;
#else
#error "vmlinux_fallback.h: add this architecture's pt_regs"
#endif

struct bpf_perf_event_data {
	bpf_user_pt_regs_t regs;
	__u64 sample_period;
	__u64 addr;
};

/* Kernel-internal: relocated by CO-RE, only the fields ember reads. */
struct file;

struct vdso_image {
	unsigned long size;
} __attribute__((preserve_access_index));

typedef struct {
	void *vdso;
	const struct vdso_image *vdso_image;
} __attribute__((preserve_access_index)) mm_context_t;

struct mm_struct {
	unsigned long start_code;
	unsigned long end_code;
	unsigned long start_stack;
	unsigned long task_size; /* the top of user space (stack_copy.bpf.h) */
	struct file *exe_file;
	mm_context_t context;
} __attribute__((preserve_access_index));

/* x86-64: fsbase is the thread pointer (stack_copy.bpf.h). */
struct thread_struct {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

typedef struct {
	int counter;
} atomic_t;

struct signal_struct {
	atomic_t live;
	unsigned long long sum_sched_runtime;
} __attribute__((preserve_access_index));

struct sched_entity {
	unsigned long long sum_exec_runtime;
} __attribute__((preserve_access_index));

/* cgroup v2 ids and hierarchies (the selection, select.bpf.h and proc.bpf.h). */
struct kernfs_node {
	__u64 id;
} __attribute__((preserve_access_index));

struct cgroup_root;

struct cgroup;

struct cgroup_subsys_state {
	struct cgroup *cgroup;
	struct cgroup_subsys_state *parent;
} __attribute__((preserve_access_index));

struct cgroup {
	struct cgroup_subsys_state self;
	struct kernfs_node *kn;
	struct cgroup_root *root;
} __attribute__((preserve_access_index));

struct css_set {
	struct cgroup *dfl_cgrp;
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int __state;
	unsigned int flags;
	int pid;
	int tgid;
	char comm[16];
	void *stack;
	struct mm_struct *mm;
	struct signal_struct *signal;
	struct thread_struct thread;
	struct sched_entity se;
	unsigned int in_execve : 1;
	struct css_set *cgroups;
	unsigned long long self_exec_id;
} __attribute__((preserve_access_index));

/* Tables found by file (unwind.bpf.h) and the mappings processes make (proc.bpf.h): a
 * mapping's file, its identity and its name. */
struct super_block {
	unsigned int s_dev;
	unsigned long s_magic;
} __attribute__((preserve_access_index));

struct inode {
	unsigned long i_ino;
	long long i_size;
	struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct qstr {
	const unsigned char *name;
} __attribute__((preserve_access_index));

struct dentry {
	struct dentry *d_parent;
	struct qstr d_name;
	struct inode *d_inode;
	struct super_block *d_sb;
} __attribute__((preserve_access_index));

struct path {
	void *mnt;
	struct dentry *dentry;
} __attribute__((preserve_access_index));

struct file {
	struct path f_path;
	struct inode *f_inode;
} __attribute__((preserve_access_index));

/* The task_vma iterator's state (6.7 and later; unwind.bpf.h asks for it weakly). */
struct bpf_iter_task_vma {
	__u64 __opaque[1];
};

struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
	unsigned long vm_flags;
	unsigned long vm_pgoff;
	struct file *vm_file;
} __attribute__((preserve_access_index));

/* The context of an "iter/task" program (its layout is the kernel's ABI for it). */
struct seq_file;
struct bpf_iter_meta {
	struct seq_file *seq;
	unsigned long long session_id;
	unsigned long long seq_num;
} __attribute__((preserve_access_index));

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
};

#endif
