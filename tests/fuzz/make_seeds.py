#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the fuzzers' seed corpora under corpus/. Run from anywhere with
gcc, objcopy, strip and xz installed; the outputs are committed, so CI does
not run this. Every seed is made here, from nothing but this script and a
few lines of C; the largest (a few hundred functions with DWARF) is some
hundred kilobytes, so that the fuzzers start from files of a real size.

fuzz_elf and fuzz_gopclntab take a first byte that picks the entry point
(see each target): seeds are written for each. Usage: make_seeds.py [GROUP...]
(gopclntab, elf, text, stack_unwind, python, ruby, php, perl, ipc; all by default)."""
import os
import shutil
import struct
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = os.path.join(HERE, "corpus")
VADDR = 0x400000  # where fuzz_gopclntab.c places its input
# fuzz_gopclntab's first byte (its header comment says what each bit stands for).
GO_WRITABLE, GO_NO_GOFUNC_SYM, GO_NO_PCLNTAB_SYM, GO_MODULEDATA_SYM, GO_NO_TEXT_START = 1, 2, 4, 8, 16
# fuzz_elf's first byte.
ELF_MEMORY, ELF_NO_SECTIONS, ELF_BUILD_ID, ELF_DEBUGLINK = 0, 1, 2, 3


def write(kind, name, data):
    os.makedirs(os.path.join(SEEDS, kind), exist_ok=True)
    with open(os.path.join(SEEDS, kind, name), "wb") as f:
        f.write(data)


def uvarint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pcvalue(steps):
    """steps: [(value, length)] from the entry; encoded as Go's pc-value table."""
    out, prev = bytearray(), -1
    for value, length in steps:
        d = value - prev
        out += uvarint((d << 1) if d >= 0 else ((~d) << 1) | 1)
        out += uvarint(length)
        prev = value
    return bytes(out + b"\0")


def gopclntab(version):
    """A two-function table in the 1.16, 1.18 or 1.20 layout with one inlined call."""
    magic = {116: 0xFFFFFFFA, 118: 0xFFFFFFF0, 120: 0xFFFFFFF1}[version]
    names = b"main.main\0main.inner\0"
    cutab = struct.pack("<I", 0)
    filetab = b"/src/main.go\0"
    pctab = bytearray(b"\0")
    pcfile = len(pctab); pctab += pcvalue([(0, 0x40)])
    pcln = len(pctab); pctab += pcvalue([(10, 0x20), (12, 0x20)])
    pcinl = len(pctab); pctab += pcvalue([(-1, 0x10), (0, 0x10), (-1, 0x20)])
    nwords = 7 if version == 116 else 8
    hdr_len = 8 + nwords * 8
    off_names = hdr_len
    off_cu = off_names + len(names)
    off_file = off_cu + len(cutab)
    off_pc = off_file + len(filetab)
    off_ftab = (off_pc + len(pctab) + 7) & ~7
    text = 0x401000
    entry_size = 16 if version == 116 else 8
    funcs_at = entry_size * 3
    fixed = 8 + 36 if version == 116 else (44 if version == 120 else 40)
    half = 0x400  # the inline tree sits at the middle of the seed (fuzz_gopclntab's gofunc)

    def func(entry_off, nameoff, inl):
        f = bytearray()
        f += struct.pack("<Q", text + entry_off) if version == 116 else struct.pack("<I", entry_off)
        f += struct.pack("<iiIIIIII", nameoff, 0, 0, 0, pcfile, pcln, 3, 0)
        if version == 120:
            f += struct.pack("<i", 9)
        f += bytes([0, 0, 0, 4])
        f += struct.pack("<III", 0, 0, pcinl if inl else 0)
        if version == 116:
            f += b"\0" * (-len(f) % 8)
            f += struct.pack("<QQQQ", 0, 0, 0, VADDR + half if inl else 0)
        else:
            f += struct.pack("<IIII", 0, 0, 0, 0 if inl else 0xFFFFFFFF)
        return bytes(f)

    f0 = func(0, 0, True)
    f1 = func(0x40, len("main.main") + 1, False)
    ftab = bytearray()
    offs = [funcs_at, funcs_at + len(f0)]
    for i, eo in enumerate((0, 0x40, 0x80)):
        fo = offs[i] if i < 2 else 0
        if version == 116:
            ftab += struct.pack("<QQ", text + eo, fo)
        else:
            ftab += struct.pack("<II", eo, fo)
    ftab += f0 + f1
    hdr = struct.pack("<IBBBB", magic, 0, 0, 1, 8) + struct.pack("<QQ", 2, 1)
    if version != 116:
        hdr += struct.pack("<Q", text)
    hdr += struct.pack("<QQQQQ", off_names, off_cu, off_file, off_pc, off_ftab)
    tab = bytearray(hdr + names + cutab + filetab + pctab)
    tab += b"\0" * (off_ftab - len(tab))
    tab += ftab
    assert len(tab) <= half
    tab += b"\0" * (half - len(tab))
    inlname = len("main.main") + 1
    if version == 120:
        tab += struct.pack("<BxxxiiI", 0, inlname, 0x30, 20)
    else:
        tab += struct.pack("<hBxiiii", -1, 0, 0, 21, inlname, 0x30)
    tab += b"\0" * (2 * half - len(tab))
    return bytes(tab), off_names, text, half


def moduledata(version, off_names, text, gofunc_off):
    """runtime.firstmoduledata (512 bytes) for a table at VADDR: pcHeader, funcnametab,
    text and gofunc are the words the reader uses."""
    words = [0] * 64
    words[0] = VADDR
    words[1] = VADDR + off_names
    words[22] = text
    words[40 if version == 120 else 38] = VADDR + gofunc_off
    return struct.pack("<64Q", *words)


def gopclntab_seeds():
    for v in (116, 118, 120):
        tab, off_names, text, half = gopclntab(v)
        write("gopclntab", f"go{v}", bytes([0]) + tab)
        # Found by scanning the segment: no runtime.pclntab symbol.
        write("gopclntab", f"go{v}-scan", bytes([GO_NO_PCLNTAB_SYM]) + tab)
        if v == 116:
            continue
        md = moduledata(v, off_names, text, half)
        # No symbols, no sections: moduledata found by its words in a writable
        # segment, and textStart (Go 1.26 writes none) and go:func.* from it.
        write("gopclntab", f"go{v}-moduledata-search",
              bytes([GO_WRITABLE | GO_NO_GOFUNC_SYM | GO_NO_TEXT_START]) + tab + md)
        # runtime.firstmoduledata named by its symbol.
        write("gopclntab", f"go{v}-moduledata-symbol",
              bytes([GO_MODULEDATA_SYM | GO_NO_GOFUNC_SYM]) + tab + md)


# A shared library with the corners of symbol tables: calls through the PLT
# (one also through the GOT: .plt.got), an untyped label, a sizeless function
# and a function nested in another (top-level assembly).
SHARED_SEED = r"""
extern int ext_alpha(int), ext_beta(int), ext_gamma(int);
int (*take_gamma)(int) = ext_gamma;
int calls_plt(int x) { return ext_alpha(x) + ext_beta(x) + take_gamma(x); }
__asm__(".text\n"
        ".globl outer\n.type outer,@function\nouter: nop; nop\n"
        ".globl inner\n.type inner,@function\ninner: nop; nop\n.size inner,2\n"
        "nop; nop\n.size outer,.-outer\n"
        ".globl untyped\nuntyped: nop; nop; nop\n"
        ".globl sizeless\n.type sizeless,@function\nsizeless: nop; ret\n");
"""


IFUNC_SEED = r"""
static int picked_impl(int x) { return x + 1; }
static int (*resolve_picked(void))(int) { return picked_impl; }
__attribute__((visibility("hidden"))) int picked(int) __attribute__((ifunc("resolve_picked")));
int calls_ifunc(int x) { return picked(x) * 2; }
"""


def large_c_seed(n):
    """n functions calling inlined helpers: DWARF with many units' worth of lines."""
    out = ["static volatile unsigned long sink;"]
    for i in range(n):
        out.append(f"static inline __attribute__((always_inline)) void h{i}(long k)"
                   f" {{ for (long j = 0; j < k; j++) sink = sink * {i + 3} + (unsigned long)j; }}")
        out.append(f"__attribute__((noinline)) void f{i}(long k) {{ h{i}(k); h{i}(k + 1); }}")
    out.append("void _start(void) { " + " ".join(f"f{i}(1);" for i in range(n)) + " for (;;) ; }")
    return "\n".join(out) + "\n"


C_SEED = r"""
static volatile unsigned long sink;
static inline __attribute__((always_inline)) void inner(long n)
{
	for (long i = 0; i < n; i++)
		sink = sink * 31 + (unsigned long)i;
}
__attribute__((noinline)) void outer(long n) { inner(n); inner(n + 1); }
void _start(void) { outer(3); for (;;) ; }
"""


def elf_seeds():
    with tempfile.TemporaryDirectory() as d:
        # Compiled as "sub/s.c" from d: DWARF names the file relative to its comp_dir.
        os.mkdir(os.path.join(d, "sub"))
        with open(os.path.join(d, "sub", "s.c"), "w") as f:
            f.write(C_SEED)
        exe = os.path.join(d, "s")
        base = ["gcc", "-O2", "-nostdlib", "-static", "-fno-asynchronous-unwind-tables",
                "-Wl,--build-id", "-o", exe, "sub/s.c"]

        def build(*extra, cmd=None):
            subprocess.run((cmd or base) + list(extra), check=True, cwd=d)
            with open(exe, "rb") as f:
                return f.read()

        def mode(m, data):
            return bytes([m]) + data

        write("elf", "dwarf5-inline", mode(ELF_MEMORY, build("-g")))
        write("elf", "dwarf4", mode(ELF_MEMORY, build("-gdwarf-4")))
        write("elf", "compressed-debug", mode(ELF_MEMORY, build("-g", "-gz")))
        write("elf", "symtab-only", mode(ELF_MEMORY, build()))
        with open(os.path.join(d, "big.c"), "w") as f:
            f.write(large_c_seed(300))
        write("elf", "large-dwarf", mode(ELF_MEMORY, build(
            "-g", cmd=["gcc", "-O1", "-nostdlib", "-static", "-Wl,--build-id", "-o", exe,
                       os.path.join(d, "big.c")])))
        # Shared libraries: PLT, untyped and nested symbols; without section headers.
        with open(os.path.join(d, "lib.c"), "w") as f:
            f.write(SHARED_SEED)
        lib = ["gcc", "-O2", "-shared", "-fPIC", "-nostdlib", "-Wl,--build-id", "-o", exe,
               os.path.join(d, "lib.c")]
        for name, extra in (("gnu-hash", ["-Wl,--hash-style=gnu"]),
                            ("sysv-hash", ["-Wl,--hash-style=sysv"]),
                            ("ibt-plt", ["-Wl,-z,ibtplt"])):
            data = build(*extra, cmd=lib)
            write("elf", "shared-" + name, mode(ELF_MEMORY, data))
            write("elf", "shared-" + name + "-no-sections", mode(ELF_NO_SECTIONS, data))
        # An IFUNC called through the PLT (an IRELATIVE slot, as in libc), and an
        # AArch64 library (adrp/ldr PLT entries, AArch64 relocations) when clang
        # and lld can make one.
        with open(os.path.join(d, "ifunc.c"), "w") as f:
            f.write(IFUNC_SEED)
        data = build(cmd=lib[:-1] + [os.path.join(d, "ifunc.c")])
        write("elf", "shared-ifunc-plt", mode(ELF_MEMORY, data))
        write("elf", "shared-ifunc-plt-no-sections", mode(ELF_NO_SECTIONS, data))
        if shutil.which("clang") and shutil.which("ld.lld"):
            with open(os.path.join(d, "a64.c"), "w") as f:
                f.write(SHARED_SEED.split("__asm__")[0] + IFUNC_SEED)
            data = build(cmd=["clang", "--target=aarch64-linux-gnu", "-fuse-ld=lld", "-O2",
                              "-shared", "-fPIC", "-nostdlib", "-Wl,--build-id", "-o", exe,
                              os.path.join(d, "a64.c")])
            write("elf", "shared-aarch64", mode(ELF_MEMORY, data))
            write("elf", "shared-aarch64-no-sections", mode(ELF_NO_SECTIONS, data))
        # A stripped program and its debug file, matched by build id, then by the
        # debug link's CRC (no build id).
        for name, m, extra in (("build-id", ELF_BUILD_ID, []),
                               ("debuglink-crc", ELF_DEBUGLINK, ["-Wl,--build-id=none"])):
            build("-g", *extra)
            dbg = exe + ".debug"
            subprocess.run(["objcopy", "--only-keep-debug", exe, dbg], check=True)
            subprocess.run(["strip", "--strip-all", exe], check=True)
            subprocess.run(["objcopy", "--add-gnu-debuglink=" + dbg, exe], check=True)
            with open(exe, "rb") as f, open(dbg, "rb") as g:
                main, debug = f.read(), g.read()
            write("elf", "debug-file-" + name,
                  mode(m, struct.pack("<I", len(main)) + main + debug))
        build("-g")
        dbg = exe + ".debug"
        subprocess.run(["objcopy", "--only-keep-debug", exe, dbg], check=True)
        subprocess.run(["strip", "--strip-all", exe], check=True)
        subprocess.run(["objcopy", "--add-gnu-debuglink=" + dbg, exe], check=True)
        with open(exe, "rb") as f:
            write("elf", "stripped-debuglink", mode(ELF_MEMORY, f.read()))
        mini = exe + ".mini"
        subprocess.run(["objcopy", "--only-keep-debug", "--strip-debug", dbg, mini], check=True)
        subprocess.run(["xz", "-f", mini], check=True)
        subprocess.run(["objcopy", "--add-section", ".gnu_debugdata=" + mini + ".xz", exe],
                       check=True)
        with open(exe, "rb") as f:
            write("elf", "minidebuginfo", mode(ELF_MEMORY, f.read()))
        # MiniDebugInfo that inflates past the first buffer, to something not ELF.
        zeros = os.path.join(d, "zeros")
        with open(zeros, "wb") as f:
            f.write(bytes(3 << 20))
        subprocess.run(["xz", "-f", zeros], check=True)
        subprocess.run(["objcopy", "--remove-section", ".gnu_debugdata", "--add-section",
                        ".gnu_debugdata=" + zeros + ".xz", exe], check=True)
        with open(exe, "rb") as f:
            write("elf", "minidebuginfo-not-elf", mode(ELF_MEMORY, f.read()))
        # DWARF that refers to a dwz supplementary file (.gnu_debugaltlink: a name,
        # then its build id); the broker answers with the debug file of mode 2.
        build("-g")
        alt = os.path.join(d, "altlink")
        with open(alt, "wb") as f:
            f.write(b"/usr/lib/debug/.dwz/s.debug\0" + bytes(range(20)))
        subprocess.run(["objcopy", "--add-section", ".gnu_debugaltlink=" + alt, exe], check=True)
        with open(exe, "rb") as f:
            main = f.read()
        write("elf", "dwz-altlink", mode(ELF_BUILD_ID, struct.pack("<I", len(main)) + main + debug))


def text_seeds():
    write("maps", "typical", b"""\
00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon
00651000-00652000 r--p 00051000 08:02 173521      /usr/bin/dbus-daemon
00e03000-00e24000 rw-p 00000000 00:00 0           [heap]
7f2c00000000-7f2c00021000 rw-p 00000000 00:00 0
7f2c0a7d3000-7f2c0a7f6000 r-xp 00000000 fd:01 2097  /lib/x86_64-linux-gnu/ld-2.31.so (deleted)
7ffd4b9e9000-7ffd4ba0a000 rw-p 00000000 00:00 0     [stack]
7ffd4bbb3000-7ffd4bbb5000 r-xp 00000000 00:00 0     [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]
""")
    write("maps", "odd-paths", b"7f00-7f01 r-xp 0 00:00 5 /tmp/a b\n7f01-7f02 r-xp 10 00:01 6 memfd:x (deleted)\nzz\n")
    write("kallsyms", "typical", b"""\
ffffffff81000000 T _stext
ffffffff81000010 T startup_64
ffffffff81001000 t do_one_initcall
ffffffffc0a01000 t e1000_probe\t[e1000]
ffffffffc0a02000 T e1000_remove\t[e1000]
ffffffffc0b00000 t bpf_prog_6deef7357e7b4530_sampler\t[bpf]
""")
    write("kallsyms", "hidden", b"0000000000000000 T _stext\n0000000000000000 t foo\t[mod]\n")
    names = {
        "cxx": b"_ZNSt6vectorIiSaIiEE9push_backERKi",
        "rust-legacy": b"_ZN4core3fmt9Formatter3pad17h0123456789abcdefE",
        "rust-v0": b"_RNvXs_Cs1234_7mycrateNtB4_3FooNtNtCs5678_4core3fmt7Display3fmt",
        "rust-v0-generic": b"_RINvCs1234_7mycrate3barRShKj2a_E",
        "plain": b"main",
    }
    for n, v in names.items():
        write("demangle", n, v)


def stack_unwind_seeds():
    """Inputs of fuzz_stack_unwind.c: flags, pc, sp, fp, rows, stack bytes."""
    def row(pc, kind, cfa=0, fp=0):
        return struct.pack("<IhBb", pc, cfa, kind, fp)

    sp = 0x7FF000000000
    CFA_SP, CFA_FP, PLT, SIGNAL, END, GAP = 2, 3, 4, 5, 6, 1
    rows = row(0x1000, CFA_SP, 2) + row(0x1100, CFA_SP, 1) + row(0x1200, END) + row(0x1300, GAP)
    stack = struct.pack("<4Q", 0, 0x1150, 0x1250, 0)
    flags = 1 | (16 << 2)  # exact pc, 16 frames at most
    write("stack_unwind", "three-frames",
          bytes([flags]) + struct.pack("<3Q", 0x1010, sp, 0) + bytes([4]) + rows + stack)
    # The same stack as the sampler sends it: 4 words, the two return addresses kept.
    sparse = struct.pack("<H2Q2Q", 4, 0x1150, 0x1250, 0b0110, 0)
    write("stack_unwind", "three-frames-sparse",
          bytes([flags]) + struct.pack("<3Q", 0x1010, sp, 0) + bytes([4 | 0x80]) + rows + sparse)
    rows = (row(0x1000, CFA_FP, 2, -2) + row(0x1100, PLT, 11) + row(0x1180, SIGNAL) +
            row(0x1200, GAP))
    uc = bytearray(192)
    struct.pack_into("<Q", uc, 120, sp + 64)
    struct.pack_into("<Q", uc, 160, sp)
    struct.pack_into("<Q", uc, 168, 0x1210)
    stack = struct.pack("<6Q", 0, 0, sp + 128, 0x1105, 0x1181, 0) + bytes(uc)
    write("stack_unwind", "fp-plt-signal",
          bytes([flags | 2]) + struct.pack("<3Q", 0x1010, sp, sp + 16) + bytes([4]) + rows +
          stack)
    # glibc's _dl_runtime_resolve: f0 saved the trampoline's rbx (CFA - 16); the trampoline's
    # CFA is rbx + 32, its caller's rbx at CFA - 32. Bit 6: the copy's rbx (sp + 128) is known.
    CFA_BX = 8
    rows = (row(0x1000, CFA_SP | 2 << 4, 3) + row(0x1100, CFA_BX | 4 << 4, 4) +
            row(0x1200, CFA_SP, 1) + row(0x1300, END) + row(0x1400, GAP))
    stack = struct.pack("<13Q", 0, sp + 64, 0x1150, 0, 0, 0, 0, 0, 0x7FF0BEEF, 0, 0, 0x1250,
                        0x1350)
    write("stack_unwind", "rbx-trampoline",
          bytes([flags]) + struct.pack("<3Q", 0x1010, sp, 0) + bytes([5 | 0x40]) + rows + stack)


PY_ELF_SEED = r"""
/* Looks like CPython 3.12 to the symbolizer, and carries glibc's pthread_getspecific. */
const unsigned long Py_Version = 0x030c01f0;
unsigned char _PyRuntime[2048] __attribute__((aligned(64))) = {1};
unsigned char PyCode_Type[64] = {1}, PyUnicode_Type[64] = {1}, PyBytes_Type[64] = {1};
volatile unsigned long sink;
void _PyEval_EvalFrameDefault(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}
__asm__(".globl PyGILState_GetThisThreadState\n.type PyGILState_GetThisThreadState,@function\n"
        "PyGILState_GetThisThreadState:\n\tmovl _PyRuntime+1548(%rip), %edi\n\tret\n"
        ".size PyGILState_GetThisThreadState, .-PyGILState_GetThisThreadState\n"
        ".globl pthread_getspecific\n.type pthread_getspecific,@function\npthread_getspecific:\n"
        ".byte 0x83,0xff,0x1f,0x77,0x3b,0x89,0xf8,0x48,0x83,0xc0,0x31,0x48,0xc1,0xe0,0x04\n"
        ".byte 0x64,0x48,0x03,0x04,0x25,0x10,0x00,0x00,0x00,0x48,0x8b,0x50,0x08,0xc3\n"
        ".size pthread_getspecific, .-pthread_getspecific\n");
void _start(void) { _PyEval_EvalFrameDefault(3); }
"""


def python_seeds():
    """Inputs of fuzz_python_lines.c, fuzz_python_code.c and fuzz_python_elf.c."""
    # Line tables: format byte, then the table. lnotab pairs, 3.10 pairs with a -128,
    # 3.11+ entries of every kind (short, one-line, no-columns, long, none).
    write("python_lines", "lnotab", bytes([0]) + bytes([0, 1, 6, 1, 8, 0xff, 10, 2]))
    write("python_lines", "linetable-310", bytes([1]) + bytes([6, 1, 4, 0x80, 8, 2, 0, 127, 2, 1]))
    loc = bytes([0x80 | 0 << 3 | 1, 0x05,                 # short form, 2 units
                 0x80 | 11 << 3 | 0, 4, 9,                # one line, +1
                 0x80 | 13 << 3 | 2, 0x06,                # no columns, +3
                 0x80 | 14 << 3 | 3, 0x41, 0x01, 2, 5, 9,  # long: +32, end +0, cols
                 0x80 | 15 << 3 | 0])                     # no location
    write("python_lines", "locations", bytes([2]) + loc)
    # Memory for the code reader, laid out as 3.12 (first byte 6: 3.6 + 6): types at
    # +8, +16, +24; a code object at +64; its strings and line table after.
    base, mem = 0x10000, bytearray(1024)
    code, name, fname, table = 64, 512, 640, 768
    def put(at, fmt, *v):
        struct.pack_into(fmt, mem, at, *v)
    put(code + 8, "<Q", base + 8)
    put(code + 52, "<I", 2)
    put(code + 68, "<I", 40)
    put(code + 112, "<Q", base + fname)
    put(code + 120, "<Q", base + name)
    put(code + 128, "<Q", base + name)
    put(code + 136, "<Q", base + table)
    put(code + 16, "<Q", 8)
    for at, text in ((name, b"Server.handle"), (fname, b"/srv/app.py")):
        put(at + 8, "<Q", base + 16)
        put(at + 16, "<Q", len(text))
        put(at + 32, "<I", 1 << 2 | 1 << 5 | 1 << 6)
        mem[at + 40:at + 40 + len(text)] = text
    put(table + 8, "<Q", base + 24)
    put(table + 16, "<Q", len(loc))
    mem[table + 32:table + 32 + len(loc)] = loc
    mem[0] = 6
    write("python_code", "code-312", bytes(mem))
    mem[0] = 2  # the same bytes read as 3.8
    write("python_code", "code-as-38", bytes(mem))
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "py.c"), os.path.join(d, "py")
        with open(src, "w") as f:
            f.write(PY_ELF_SEED)
        subprocess.run(["gcc", "-O2", "-nostdlib", "-static", "-o", exe, src], check=True)
        with open(exe, "rb") as f:
            write("python_elf", "fake-312", f.read())


RB_ELF_SEED = r"""__thread void *ruby_current_ec;
const unsigned ruby_api_version[3] = {3, 1, 2};
void *rb_current_ec(void) { return ruby_current_ec; }
static struct { unsigned last_id, pad; void *a, *ids; } global_symbols __attribute__((used)) = {1, 0, 0, 0};
__asm__(".text\n"
        ".type vm_exec_core, @function\n"
        "vm_exec_core:\n.cfi_startproc\n.fill 5000, 1, 0x90\nret\n.cfi_endproc\n"
        ".size vm_exec_core, .-vm_exec_core\n"
        ".globl rb_vm_exec\n.type rb_vm_exec, @function\n"
        "rb_vm_exec:\n.cfi_startproc\ncall vm_exec_core\nret\n.cfi_endproc\n"
        ".size rb_vm_exec, .-rb_vm_exec\n"
        ".globl rb_id2str\n.type rb_id2str, @function\n"
        "rb_id2str:\n.cfi_startproc\ncmp %edi, global_symbols(%rip)\njb 1f\n"
        "mov global_symbols+16(%rip), %rdi\n1: ret\n.cfi_endproc\n"
        ".size rb_id2str, .-rb_id2str\n.fill 256, 1, 0xcc\n");
"""


def ruby_seeds():
    """Inputs of fuzz_ruby_frames.c and fuzz_ruby_elf.c: Ruby 3.1's objects from 0x10000 on, as its header says
    (first byte 1: the symbol table at +0x40, ids to learn; 3: ids known). A method body
    with a line table and its succinct index (iseq.c's succ_index_table_create), a block of
    it with an Array path, a C function's method entry, its class and the symbol table."""
    base, mem = 0x10000, bytearray(0xe00)
    T_STRING, T_ARRAY, T_CLASS, T_IMEMO, EMBED = 5, 7, 2, 0x1A, 1 << 13

    def put(at, fmt, *v):
        struct.pack_into(fmt, mem, at, *v)

    def string(at, text):  # embedded: length in bits 14..18
        put(at, "<Q", T_STRING | len(text) << 14)
        mem[at + 16:at + 16 + len(text)] = text

    def succ(at, max_pos, data):
        imm = (max_pos + 8 if max_pos < 54 else 54) // 9
        blocks = 0 if max_pos < 54 else (max_pos - 54 + 511) // 512
        r = 0
        for j in range(imm):
            w = 0
            for i in range(9):
                if r < len(data) and data[r] == j * 9 + i:
                    r += 1
                w |= r << (7 * i)
            put(at + 8 * j, "<Q", w)
        for k in range(blocks):
            b, small, rank = at + 48 + 80 * k, 0, 0
            put(b, "<I", r)
            for j in range(8):
                bits = 0
                if j:
                    small |= rank << (9 * (j - 1))
                for i in range(64):
                    if r < len(data) and data[r] == k * 512 + j * 64 + i + 54:
                        bits |= 1 << i
                        r += 1
                put(b + 16 + 8 * j, "<Q", bits)
                rank += bin(bits).count("1")
            put(b + 8, "<Q", small)

    # Symbols: last id 1000, ids an embedded Array of one chunk (a heap Array of 96 slots).
    put(0x40, "<I", 1000)
    put(0x50, "<Q", base + 0x80)
    put(0x80, "<QQQ", T_ARRAY | EMBED | 1 << 15, 0, base + 0x200)
    put(0x200, "<QQQQQ", T_ARRAY, 0, 96, 0, base + 0x600)
    for at in range(0x600, 0x900, 8):
        put(at, "<Q", 8)  # nil
    put(0x600 + 8 * 80, "<Q", base + 0x440)  # serial 40: "times"
    put(0x600 + 8 * 82, "<Q", base + 0x470)  # serial 41: "__classpath__"
    string(0x440, b"times")
    string(0x470, b"__classpath__")
    # Integer: its rb_classext_t, ivar table, one entry {hash, key 41, "Integer"}.
    put(0x280, "<QQQQ", T_CLASS, 0, 0, base + 0x2C0)
    put(0x2C8, "<Q", base + 0x300)
    put(0x300, "<B", 2)
    put(0x320, "<QQQ", 0, 1, base + 0x340)
    put(0x340, "<QQQ", 5, 41, base + 0x380)
    string(0x380, b"Integer")
    # Integer#times: method entry {flags, defined_class, def, called_id, owner}, its def.
    put(0x3C0, "<QQQQQ", T_IMEMO | 6 << 12, base + 0x280, base + 0x400, 40, base + 0x280)
    put(0x400, "<B", 1)
    put(0x420, "<Q", 40)
    # leaf_a: its iseq object, body (size 100), path, label, line table at 0, 5, 60.
    string(0x4A0, b"shop/cart.rb")
    string(0x4D0, b"leaf_a")
    put(0x4F0, "<QQQ", T_IMEMO | 7 << 12, 0, base + 0x900)
    put(0x900, "<IIQ", 1, 100, 0x7F0000001000)
    put(0x940, "<QQQQ", base + 0x4A0, base + 0x4D0, base + 0x4D0, 14 * 2 + 1)
    put(0x978, "<QQIxxxxQ", base + 0xA80, 0, 3, base + 0xAC0)
    put(0x9B0, "<Q", base + 0x4F0)
    for i, line in enumerate((15, 16, 17)):
        put(0xA80 + 12 * i, "<III", line, i, 2)
    succ(0xAC0, 100, [0, 5, 60])
    # block in leaf_a: path [path, path], local iseq leaf_a's.
    string(0x520, b"block in leaf_a")
    put(0x550, "<QQQQ", T_ARRAY | EMBED | 2 << 15, 0, base + 0x4A0, base + 0x4A0)
    put(0xB80, "<IIQ", 2, 10, 0x7F0000002000)
    put(0xBC0, "<QQQQ", base + 0x550, base + 0x4D0, base + 0x520, 15 * 2 + 1)
    put(0xC30, "<Q", base + 0x4F0)
    mem[0] = 1
    write("ruby_frames", "ruby31-learn-ids", bytes(mem))
    mem[0] = 3
    write("ruby_frames", "ruby31-ids-known", bytes(mem))
    # fuzz_ruby_elf: a shared library shaped as libruby is to ember: ruby_api_version,
    # ruby_current_ec reached through DTPMOD64/DTPOFF64, rb_vm_exec calling a 5,000-byte
    # function (vm_exec_core, by .eh_frame_hdr) and rb_id2str reading the symbol table.
    with tempfile.TemporaryDirectory() as d:
        src, lib = os.path.join(d, "rb.c"), os.path.join(d, "libruby-3.1.so")
        with open(src, "w") as f:
            f.write(RB_ELF_SEED)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-nostdlib", "-Wl,--eh-frame-hdr",
                        "-o", lib, src], check=True)
        with open(lib, "rb") as f:
            write("ruby_elf", "fake-31", f.read())


PHP_ELF_SEED = r"""struct { char pad[0x1e8]; void *current_execute_data; char rest[0x100]; } executor_globals;
const char powered_by[] __attribute__((used)) = "X-Powered-By: PHP/8.2.36";
__asm__(".text\n"
        ".globl execute_ex\n.type execute_ex, @function\n"
        "execute_ex:\n.cfi_startproc\n.fill 5000, 1, 0x90\nret\n.cfi_endproc\n"
        ".size execute_ex, .-execute_ex\n");
"""


def php_seeds():
    """Inputs of fuzz_php_frames.c and fuzz_php_elf.c. Frames: PHP 8.2's objects from 0x10000
    on, as its header says: a method (Shop\\Cart::leaf_a, its class, file and lines) at +0,
    an internal function (array_map) at +0x100, their strings and the class from +0x200.
    ELF: an executable shaped as php8.2 is to ember (executor_globals, execute_ex, the
    X-Powered-By string)."""
    base = 0x10000
    mem = bytearray(0x600)

    def put(at, fmt, *v):
        struct.pack_into(fmt, mem, at, *v)

    def string(at, text):
        put(at, "<IIQQ", 1, 6 | 0x10 << 4, 0, len(text))
        mem[at + 0x18:at + 0x18 + len(text)] = text.encode()

    put(0, "<B", 2)  # a user function
    put(8, "<QQ", base + 0x200, base + 0x380)  # name, scope
    put(0x58, "<Q", 0x7000)  # opcodes
    put(0x98, "<QII", base + 0x240, 47, 57)  # filename, line_start, line_end
    put(0x100, "<B", 1)  # an internal function
    put(0x108, "<QQ", base + 0x2a0, 0)
    put(0x148, "<Q", 0x5555deadbeef)  # handler
    string(0x200, "leaf_a")
    string(0x240, "/srv/app/Cart.php")
    string(0x2a0, "array_map")
    string(0x2e0, "Shop\\Cart")
    put(0x380, "<BxxxxxxxQ", 2, base + 0x2e0)  # a user class and its name
    write("php_frames", "php82-method-and-internal", bytes(mem))
    write("php_elf", "fake-82", shared_object(PHP_ELF_SEED))


def shared_object(source):
    """The bytes of a shared object (no C library, with .eh_frame_hdr) built from source."""
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "seed.c"), os.path.join(d, "seed.so")
        with open(src, "w") as f:
            f.write(source)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-nostdlib", "-Wl,--eh-frame-hdr",
                        "-o", exe, src], check=True)
        with open(exe, "rb") as f:
            return f.read()


PERL_ELF_SEED = r"""
/* What ember reads of a perl executable or libperl.so: the loop, the key, the version bytes;
 * and of glibc: pthread_getspecific's key-slot code (add $49, %rax; shl $4, %rax;
 * add %fs:0x10, %rax; mov 8(%rax), %rax). */
const unsigned char PL_revision __attribute__((used)) = 5;
const unsigned char PL_version __attribute__((used)) = 36;
const unsigned char PL_subversion __attribute__((used)) = 0;
unsigned int PL_thr_key __attribute__((used)) = 1;
__asm__(".text\n"
        ".globl Perl_runops_standard\n.type Perl_runops_standard, @function\n"
        "Perl_runops_standard:\n.cfi_startproc\n.fill 76, 1, 0x90\nret\n.cfi_endproc\n"
        ".globl pthread_getspecific\n.type pthread_getspecific, @function\n"
        "pthread_getspecific:\n.byte 0x48,0x83,0xc0,0x31,0x48,0xc1,0xe0,0x04,0x64,0x48,0x03\n"
        ".byte 0x04,0x25,0x10,0x00,0x00,0x00,0x48,0x8b,0x40,0x08\nret\n.fill 64, 1, 0xcc\n"
        ".size pthread_getspecific, .-pthread_getspecific\n");
"""


def perl_seeds():
    """Inputs of fuzz_perl_frames.c and fuzz_perl_elf.c. Frames: perl 5.36's objects from
    0x10000 on, as test_perl_frames.c lays them out: a sub's CV (Shop::Cart::leaf_a) at +0,
    its GV at +0x200, the stash at +0x400, HEKs and the file from +0x600, an eval's COP at
    +0x700. ELF: a shared object shaped as perl is to ember, with glibc's key-slot code."""
    base = 0x10000
    mem = bytearray(0x800)

    def put(at, fmt, *v):
        struct.pack_into(fmt, mem, at, *v)

    def hek(at, text):
        put(at, "<Ii", 0x1234, len(text))
        mem[at + 8:at + 8 + len(text)] = text.encode()

    put(0, "<QII", base + 0x100, 1, 13)  # the CV's head: body, refcount, SVt_PVCV
    put(0x120, "<Q", base + 0x400)  # CvSTASH
    put(0x138, "<QQ", base + 0x200, base + 0x680)  # its GV, its file
    put(0x200, "<QII", base + 0x300, 1, 9 | 0x8000)  # a GV with a GP
    put(0x320, "<QQ", base + 0x600, base + 0x400)  # its name HEK, its stash
    put(0x400, "<QII", base + 0x500, 1, 12 | 0x02000000)  # a stash with its aux part
    put(0x520, "<Q", base + 0x640)  # its name HEK
    hek(0x600, "leaf_a")
    hek(0x640, "Shop::Cart")
    mem[0x680:0x680 + 17] = b"/srv/shop/Cart.pm"
    put(0x724, "<IQQ", 3, 7, base + 0x780)  # a COP: line, stash offset, file
    mem[0x780:0x789] = b"(eval 12)"
    write("perl_frames", "perl536-sub-and-eval", bytes(mem))
    write("perl_elf", "fake-536", shared_object(PERL_ELF_SEED))


def ipc_seeds():
    """The collector's targets (fuzz_proto, fuzz_table_loader, fuzz_peer, fuzz_broker_maps):
    seeds_ipc.c writes them, with the protocol's own structs."""
    src = os.path.dirname(os.path.dirname(HERE))
    for kind in ("proto", "table_loader", "peer", "broker_maps"):
        os.makedirs(os.path.join(SEEDS, kind), exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "seeds_ipc")
        subprocess.run(["gcc", "-O1", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-I", src,
                        "-o", exe, os.path.join(HERE, "seeds_ipc.c"), os.path.join(src, "ipc", "proto.c")],
                       check=True)
        subprocess.run([exe, SEEDS], check=True)


GROUPS = {"gopclntab": gopclntab_seeds, "elf": elf_seeds, "text": text_seeds,
          "stack_unwind": stack_unwind_seeds, "python": python_seeds, "ruby": ruby_seeds,
          "php": php_seeds, "perl": perl_seeds,
          "ipc": ipc_seeds}

if __name__ == "__main__":
    # Usage: make_seeds.py [GROUP...] (all of them by default)
    import sys
    for group in sys.argv[1:] or GROUPS:
        GROUPS[group]()
    for root, _, files in os.walk(SEEDS):
        for f in sorted(files):
            p = os.path.join(root, f)
            print(f"{os.path.relpath(p, HERE)}: {os.path.getsize(p)} bytes")
