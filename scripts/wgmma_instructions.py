#!/usr/bin/env python3
"""Prints the wgmma.mma_async macros of src/cuda/hopper/wgmma_instructions.cuh, one per instruction
the sm_90a flash kernels issue: the SS form (both operands in shared memory, K-major) for
S = Q·Kᵀ at each key-tile width (and the backward's Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ at 64 query rows), the
RS form with tnspB (A from registers, B MN-major) for O += P·V at each head dim (and the backward's
dV += Pᵀ·dO, dK += dSᵀ·Q), the SS form with tnspB for the backward's dQ = dS·K over the head
dim, and the RS form with both K-major for the backward's Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ at D 64 (K and V
held in registers). Their operand lists are long and regular (N/2 fp32 accumulators, then the
operands), so they are printed here rather than typed; paste the output over the macros in the
header when an instruction is added. --check compares the header's macros with these.

  python3 scripts/wgmma_instructions.py [--check]
"""
import pathlib
import sys

SS_N = [64, 80, 112, 128]        # the backward's query block, kBlockN of the forwards (flash_sm90_block_n)
RS_N = [64, 72, 96, 128, 192, 256]  # the kernel head dims, and 72 = D 64 + the ones column
SS_TB_N = [64, 128]              # the backward's dQ over its kernel head dims (64, 128)
RS_K_N = [64]                    # the backward's query block (Sᵀ, dPᵀ with K, V from registers)
WIDTH = 117  # column of the trailing backslash


def line(text):
    return text.ljust(WIDTH) + "\\"


def macro(form, n):
    acc = n // 2
    name = f"ATTNPROF_WGMMA_{form.split('_')[0]}_M64N{n}K16" + ("_TB" if form in ("RS", "SS_TB") else "")
    rs = form in ("RS", "RS_K")
    out = [line(f"#define {name}(PTX_TYPE)"), line("  asm volatile("), line('      "{\\n"'),
           line('      ".reg .pred p;\\n"')]
    # The predicate operand follows the accumulators and the A, B operands (SS: two descriptors; RS:
    # four A registers and B's descriptor), then the scale-d input.
    out.append(line(f'      "setp.ne.b32 p, %{acc + 5 if rs else acc + 2}, 0;\\n"'))
    out.append(line(f'      "wgmma.mma_async.sync.aligned.m64n{n}k16.f32." PTX_TYPE "." PTX_TYPE " "'))
    regs = [f"%{i}" for i in range(acc)]
    rows = [", ".join(regs[i:i + 16]) for i in range(0, acc, 16)]
    for i, row in enumerate(rows):
        out.append(line(f'      "{"{" if i == 0 else ""}{row}{"}, " if i == len(rows) - 1 else ", "}"'))
    if form == "SS":  # tnspA = tnspB = 0: both K-major
        out.append(line(f'      "%{acc}, %{acc + 1}, p, 1, 1, 0, 0;\\n"'))
    elif form == "SS_TB":  # tnspB = 1: A K-major, B MN-major
        out.append(line(f'      "%{acc}, %{acc + 1}, p, 1, 1, 0, 1;\\n"'))
    elif form == "RS_K":  # tnspB = 0: B K-major
        out.append(line(f'      "{{%{acc}, %{acc + 1}, %{acc + 2}, %{acc + 3}}}, %{acc + 4}, p, 1, 1, 0;\\n"'))
    else:  # tnspB = 1: V read MN-major
        out.append(line(f'      "{{%{acc}, %{acc + 1}, %{acc + 2}, %{acc + 3}}}, %{acc + 4}, p, 1, 1, 1;\\n"'))
    out.append(line('      "}\\n"'))
    items = [f'"+f"(d[{i}])' for i in range(acc)]
    groups = [", ".join(items[i:i + 8]) for i in range(0, acc, 8)]
    for i, group in enumerate(groups):
        out.append(line(("      : " if i == 0 else "        ") + group + ("," if i < len(groups) - 1 else "")))
    if form in ("SS", "SS_TB"):
        out.append(line('      : "l"(a_desc), "l"(b_desc), "r"(scale_d)'))
    elif form == "RS_K":
        out.append(line('      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(scale_d)'))
    else:
        out.append(line('      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1)'))
    out.append('      : "memory")')
    return "\n".join(out)


def all_macros():
    return ([macro("SS", n) for n in SS_N] + [macro("RS", n) for n in RS_N] +
            [macro("SS_TB", n) for n in SS_TB_N] + [macro("RS_K", n) for n in RS_K_N])


def main():
    macros = all_macros()
    if sys.argv[1:] == ["--check"]:
        header = (pathlib.Path(__file__).resolve().parent.parent / "src/cuda/hopper/wgmma_instructions.cuh").read_text()
        missing = [m.splitlines()[0].split()[1] for m in macros if m not in header]
        if missing:
            print("wgmma_instructions.cuh differs from the printed text at: " + ", ".join(missing))
            return 1
        print(f"wgmma_instructions.cuh: all {len(macros)} macros match")
        return 0
    print("\n\n".join(macros))
    return 0


if __name__ == "__main__":
    sys.exit(main())
